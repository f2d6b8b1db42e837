// forge train on a Llama-family model (see train_model.h).
#include "cli_util.h"
#include "forge/generate.h"
#include "forge/lora.h"
#include "forge/model.h"
#include "forge/train.h"
#include "hf_model_out.h"
#include "train_lora.h"
#include "train_model.h"
#include "train_settings.h"

namespace forge::cli {

namespace {

namespace fs = std::filesystem;

class LlamaTrainModel : public TrainModel {
 public:
  LlamaTrainModel(const TrainArgs& a, const std::optional<FoundCheckpoint>& found, const Device& dev)
      : base_(check_model_dir(a.model)), lora_(wants_lora(a)) {
    model_ = load_model(run_weights_dir(a, found), dev, train_weights_dtype(a));
    attach_run_adapter(a, found, *model_);
    trainer_ = std::make_unique<LlamaTrainer>(*model_, make_llama_train_config(a));
    if (found) trainer_->read_state(found->dir);
  }

  std::string describe() const override {
    const ModelInfo& i = model_->info();
    return i.family + " " + std::to_string(i.layers) + " layers x " + std::to_string(i.hidden_size) + ", context " +
           std::to_string(i.context_length) + ", vocab " + std::to_string(i.vocab_size) + ", " + i.weights +
           adapter_text(*model_);
  }
  int64_t context() const override { return model_->context_length(); }
  int64_t vocab() const override { return model_->vocab_size(); }
  int64_t steps_done() const override { return trainer_->steps_done(); }

  Gpt2StepResult step(const std::vector<Gpt2MicroBatch>& micro) override {
    std::vector<TrainBatch> mbs;
    for (const Gpt2MicroBatch& m : micro) mbs.push_back({m.ids, m.targets});
    const TrainStepResult r = trainer_->step(mbs);
    return {r.loss, r.grad_norm, r.lr};
  }
  float eval_loss(const Gpt2MicroBatch& mb) override { return trainer_->eval_loss({mb.ids, mb.targets}); }

  std::vector<uint32_t> sample(const std::vector<uint32_t>& prompt, int64_t max_new, uint64_t seed) override {
    GenerateOptions o;
    o.max_new_tokens = std::min<int64_t>(max_new, context() - int64_t(prompt.size()));
    o.sample.temperature = 1.0f;
    o.sample.top_k = 40;
    o.sample.seed = seed;
    if (o.max_new_tokens < 1) return {};
    return generate(*model_, prompt, o);
  }

  void save(const fs::path& dir, const CheckpointExtras& extras) override {
    save_train_checkpoint(dir, trainer_->steps_done(), extras, [&](const fs::path& tmp) {
      if (lora_) save_adapter(*model_, tmp, base_.string());
      else write_hf_model(tmp, base_, trainer_->host_weights());
      trainer_->write_state(tmp);
    });
  }

 private:
  fs::path base_;
  bool lora_;
  std::unique_ptr<CausalLM> model_;
  std::unique_ptr<LlamaTrainer> trainer_;
};

}  // namespace

std::unique_ptr<TrainModel> llama_train_model(const TrainArgs& a, const std::optional<FoundCheckpoint>& found,
                                              const Device& dev) {
  return std::make_unique<LlamaTrainModel>(a, found, dev);
}

}  // namespace forge::cli
