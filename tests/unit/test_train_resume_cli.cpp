// forge train interrupted and resumed, as a user (or a crash) would do it:
// SIGINT / SIGTERM save a checkpoint and exit 130 / 143; `--resume` needs no
// other flag and refuses one that contradicts the run; log.jsonl is cut back
// to the checkpoint; --out refuses an existing run; a crash between the
// renames of a save is recovered; 20 SIGKILLs at random moments never lose
// the run; a full disk (RLIMIT_FSIZE) is a clear error that keeps the previous
// checkpoint. Every resumed run must end bit for bit where an uninterrupted
// one does (CPU, one thread): the same losses and the same model file.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <thread>

#include "unit/cli_process.h"

namespace {

namespace fs = std::filesystem;
using forge::testing::CliOptions;
using forge::testing::CliProcess;
using forge::testing::lines_of;
using forge::testing::read_bytes;
using forge::testing::run_cli;
using forge::testing::ScratchDir;

// A very small model on bytes, so a checkpoint is ~270 KB and a step a few ms.
std::vector<std::string> train_args(const fs::path& data, const fs::path& out, int steps,
                                    std::vector<std::string> extra = {}) {
  std::vector<std::string> a = {"train",      "--data",  data.string(), "--preset", "tiny", "--n-layer",
                                "1",          "--n-embd", "32",         "--n-head", "2",    "--context",
                                "32",         "--tokenizer", "bytes",   "--batch",  "2",    "--seq",
                                "16",         "--eval-every", "0",      "--eval-batches", "1", "--sample-tokens",
                                "4",          "--dropout", "0.1",       "--warmup", "2",    "--device",
                                "cpu",        "--steps", std::to_string(steps), "--out", out.string()};
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

std::vector<std::string> resume_args(const fs::path& out, std::vector<std::string> extra = {}) {
  std::vector<std::string> a = {"train", "--out", out.string(), "--resume"};
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

// "loss 3" -> the logged loss of step 3, "val 4" -> the validation loss after
// 4 steps, as printed (round-trip precision). Fails on a step logged twice.
std::map<std::string, std::string> log_values(const fs::path& run) {
  std::map<std::string, std::string> out;
  std::ifstream f(run / "log.jsonl");
  for (std::string line; std::getline(f, line);) {
    const auto j = nlohmann::json::parse(line);
    const bool train = j.contains("loss");
    const std::string key = std::string(train ? "loss " : "val ") + std::to_string(j["step"].get<int>());
    EXPECT_FALSE(out.count(key)) << key << " logged twice in " << run;
    out[key] = j[train ? "loss" : "val_loss"].dump();
  }
  return out;
}

std::map<std::string, std::string> losses_only(const std::map<std::string, std::string>& m) {
  std::map<std::string, std::string> out;
  for (const auto& [k, v] : m)
    if (k.rfind("loss ", 0) == 0) out[k] = v;
  return out;
}

int checkpoint_step(const fs::path& run) {
  std::ifstream f(run / "checkpoint" / "train.json");
  return nlohmann::json::parse(f)["step"].get<int>();
}

size_t log_lines(const fs::path& run) {
  std::ifstream f(run / "log.jsonl");
  size_t n = 0;
  for (std::string line; std::getline(f, line);) n += !line.empty();
  return n;
}

// The run ends where the reference does: same losses, same model bytes.
void expect_same_run(const fs::path& ref, const fs::path& run) {
  EXPECT_EQ(losses_only(log_values(ref)), losses_only(log_values(run)));
  EXPECT_TRUE(read_bytes(ref / "checkpoint/model.safetensors") == read_bytes(run / "checkpoint/model.safetensors"))
      << run << " ends with other weights than " << ref;
}

struct Fixture {
  ScratchDir dir;
  fs::path text;
  explicit Fixture(const std::string& tag) : dir(tag), text(dir.path / "text.txt") {
    forge::testing::write_sample_text(text);
  }
  fs::path operator/(const std::string& name) const { return dir.path / name; }
};

}  // namespace

TEST(TrainResumeCli, SignalSavesCheckpointAndResumeNeedsNoFlags) {
  Fixture fx("resume_signal");
  const fs::path ref = fx / "ref";
  ASSERT_EQ(run_cli(train_args(fx.text, ref, 60), fx.dir.path).code, 0);
  for (const int sig : {SIGINT, SIGTERM}) {
    const fs::path part = fx / ("part" + std::to_string(sig));
    int code = 0;
    std::string out;
    for (int attempt = 0; attempt < 3; ++attempt) {  // again if the run finished before the signal came
      fs::remove_all(part);
      CliProcess p(train_args(fx.text, part, 60), fx / "signal_output.txt");
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
      while (log_lines(part) < 2 && !p.finished() && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      p.signal(sig);
      code = p.wait();
      out = p.output();
      if (code != 0) break;
    }
    ASSERT_EQ(code, 128 + sig) << out;
    EXPECT_FALSE(out.empty());
    const int step = checkpoint_step(part);
    EXPECT_GT(step, 0);
    EXPECT_LT(step, 60);
    EXPECT_NE(out.find(std::string("stopped by ") + (sig == SIGINT ? "SIGINT" : "SIGTERM") + " after step " +
                       std::to_string(step) + "; checkpoint saved to " + (part / "checkpoint").string()),
              std::string::npos)
        << out;
    EXPECT_NE(out.find("forge train --out " + part.string() + " --resume"), std::string::npos) << out;

    const auto r = run_cli(resume_args(part), fx.dir.path);
    ASSERT_EQ(r.code, 0) << r.out;
    EXPECT_NE(r.out.find("resuming " + part.string() + " at step " + std::to_string(step) + " of 60 from " +
                         (part / "checkpoint").string()),
              std::string::npos)
        << r.out;
    expect_same_run(ref, part);
  }
}

TEST(TrainResumeCli, FlagsThatContradictTheRunAreRefused) {
  Fixture fx("resume_flags");
  const fs::path run = fx / "run", ref = fx / "ref";
  ASSERT_EQ(run_cli(train_args(fx.text, run, 6, {"--stop-at", "3"}), fx.dir.path).code, 0);
  const std::string marker = read_bytes(run / "checkpoint/train.json");
  forge::testing::write_sample_text(fx / "other.txt", 300);
  struct Case {
    std::vector<std::string> flags;
    std::string what;
  };
  const Case cases[] = {
      {{"--lr", "0.01"}, "--lr 0.01 contradicts the run in '" + run.string() + "', which was trained with --lr 0.0006"},
      {{"--batch", "4"}, "--batch 4 contradicts"},
      {{"--seq", "8"}, "--seq 8 contradicts"},
      {{"--seed", "7"}, "--seed 7 contradicts the run in '" + run.string() + "', which was trained with --seed 1234"},
      {{"--warmup", "0"}, "--warmup 0 contradicts"},
      {{"--constant-lr"}, "--constant-lr true contradicts"},
      {{"--preset", "124M"}, "--preset 124M contradicts"},
      {{"--n-layer", "2"}, "--n-layer 2 contradicts the checkpoint's model (--n-layer 1)"},
      {{"--data", (fx / "other.txt").string()}, "--data"},
      {{"--tokenizer", (fx / "text.txt").string()}, "--tokenizer"},
      {{"--steps", "3"}, "--steps 3: the run in '" + run.string() + "' is already at step 3"},
  };
  for (const Case& c : cases) {
    const auto r = run_cli(resume_args(run, c.flags), fx.dir.path);
    SCOPED_TRACE(c.flags[0]);
    EXPECT_EQ(r.code, 2) << r.out;
    ASSERT_EQ(lines_of(r.out).size(), 1u) << r.out;
    EXPECT_EQ(r.out.rfind("forge: error: " + c.what, 0), 0u) << r.out;
  }
  EXPECT_EQ(read_bytes(run / "checkpoint/train.json"), marker);  // refusals change nothing

  // Repeating the run's own values is fine, more steps too, with the schedule change stated.
  auto r = run_cli(resume_args(run, {"--steps", "8", "--batch", "2", "--lr", "6e-4", "--eval-every", "4"}),
                   fx.dir.path);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("--steps 8 (was 6): the cosine decay now ends at step 8 instead of 6, so the learning rate "
                       "from step 3 on differs from the original schedule"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(checkpoint_step(run), 8);
  // The new settings are the run's now: a resume of the finished run says so.
  r = run_cli(resume_args(run), fx.dir.path);
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("the run is complete (step 8 of 8)"), std::string::npos) << r.out;
}

TEST(TrainResumeCli, LogIsCutBackToTheCheckpoint) {
  Fixture fx("resume_log");
  const fs::path ref = fx / "ref", run = fx / "run";
  ASSERT_EQ(run_cli(train_args(fx.text, ref, 8, {"--eval-every", "2"}), fx.dir.path).code, 0);
  ASSERT_EQ(run_cli(train_args(fx.text, run, 8, {"--eval-every", "2", "--stop-at", "3"}), fx.dir.path).code, 0);
  fs::copy(run / "checkpoint", fx / "step3", fs::copy_options::recursive);
  ASSERT_EQ(run_cli(resume_args(run, {"--stop-at", "6"}), fx.dir.path).code, 0);
  // As if the run had died after step 6 without saving: the log is ahead of the checkpoint.
  fs::remove_all(run / "checkpoint");
  fs::copy(fx / "step3", run / "checkpoint", fs::copy_options::recursive);
  const auto r = run_cli(resume_args(run), fx.dir.path);
  ASSERT_EQ(r.code, 0) << r.out;
  // Steps 3, 4, 5 and the evaluations after 4 and 6 steps were past the checkpoint.
  EXPECT_NE(r.out.find("log.jsonl cut back to step 3 (5 lines past the checkpoint removed)"), std::string::npos)
      << r.out;
  const auto got = log_values(run), want = log_values(ref);
  EXPECT_EQ(losses_only(got), losses_only(want));
  for (const char* key : {"val 2", "val 4", "val 6", "val 8"}) EXPECT_EQ(got.at(key), want.at(key)) << key;
}

TEST(TrainResumeCli, OutRefusesAnExistingRun) {
  Fixture fx("resume_out");
  const fs::path run = fx / "run";
  fs::create_directories(run);
  std::ofstream(run / "notes.md") << "mine";  // a folder with other files is fine
  ASSERT_EQ(run_cli(train_args(fx.text, run, 2), fx.dir.path).code, 0);
  const std::string model = read_bytes(run / "checkpoint/model.safetensors");
  auto r = run_cli(train_args(fx.text, run, 2, {"--seed", "9"}), fx.dir.path);
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.out, "forge: error: --out '" + run.string() +
                       "' holds a run already: continue it with --resume, or pass --overwrite to start again (see "
                       "forge help train)\n");
  EXPECT_EQ(read_bytes(run / "checkpoint/model.safetensors"), model);
  r = run_cli(train_args(fx.text, run, 2, {"--seed", "9", "--overwrite"}), fx.dir.path);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("--overwrite: removed the previous run in " + run.string()), std::string::npos) << r.out;
  EXPECT_NE(read_bytes(run / "checkpoint/model.safetensors"), model);
  EXPECT_EQ(read_bytes(run / "notes.md"), "mine");
  // --resume where no run is: says so.
  r = run_cli(resume_args(fx / "none"), fx.dir.path);
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("--resume: no checkpoint in"), std::string::npos) << r.out;
}

TEST(TrainResumeCli, CrashBetweenTheRenamesOfASaveIsRecovered) {
  Fixture fx("resume_renames");
  const fs::path ref = fx / "ref", run = fx / "run", run2 = fx / "run2";
  ASSERT_EQ(run_cli(train_args(fx.text, ref, 6, {"--save-every", "2"}), fx.dir.path).code, 0);
  ASSERT_EQ(run_cli(train_args(fx.text, run, 6, {"--save-every", "2", "--stop-at", "2"}), fx.dir.path).code, 0);
  // The save after step 4 dies with checkpoint/ moved to checkpoint.old and
  // checkpoint.tmp not yet renamed: no checkpoint/ at all.
  CliOptions kill_there;
  kill_there.env = {{"FORGE_FAULT_KILL_AT", "checkpoint-aside"}};
  const auto killed = run_cli(resume_args(run), fx.dir.path, kill_there);
  ASSERT_EQ(killed.code, 128 + SIGKILL) << killed.out;
  ASSERT_FALSE(fs::exists(run / "checkpoint"));
  ASSERT_TRUE(fs::exists(run / "checkpoint.old"));
  ASSERT_TRUE(fs::exists(run / "checkpoint.tmp"));
  fs::copy(run, run2, fs::copy_options::recursive);

  // The newest complete one is the new save: resume takes it.
  auto r = run_cli(resume_args(run), fx.dir.path);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("recovered the checkpoint of step 4 from checkpoint.tmp"), std::string::npos) << r.out;
  expect_same_run(ref, run);
  EXPECT_FALSE(fs::exists(run / "checkpoint.old"));
  EXPECT_FALSE(fs::exists(run / "checkpoint.tmp"));

  // With the new save cut short, only checkpoint.old is whole: resume takes it.
  fs::resize_file(run2 / "checkpoint.tmp/optimizer.safetensors", 1000);
  r = run_cli(resume_args(run2), fx.dir.path);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("recovered the checkpoint of step 2 from checkpoint.old"), std::string::npos) << r.out;
  expect_same_run(ref, run2);

  // Killed with the new save whole but not yet renamed: the newer one wins.
  const fs::path run3 = fx / "run3";
  ASSERT_EQ(run_cli(train_args(fx.text, run3, 6, {"--save-every", "2", "--stop-at", "2"}), fx.dir.path).code, 0);
  kill_there.env = {{"FORGE_FAULT_KILL_AT", "checkpoint-written"}};
  ASSERT_EQ(run_cli(resume_args(run3), fx.dir.path, kill_there).code, 128 + SIGKILL);
  ASSERT_TRUE(fs::exists(run3 / "checkpoint"));
  ASSERT_TRUE(fs::exists(run3 / "checkpoint.tmp"));
  r = run_cli(resume_args(run3), fx.dir.path);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("recovered the checkpoint of step 4 from checkpoint.tmp"), std::string::npos) << r.out;
  expect_same_run(ref, run3);
}

TEST(TrainResumeCli, SigkillAtRandomMomentsNeverLosesTheRun) {
  Fixture fx("resume_sigkill");
  const fs::path ref = fx / "ref", run = fx / "run";
  const int steps = 24;
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_EQ(run_cli(train_args(fx.text, ref, steps, {"--save-every", "1"}), fx.dir.path).code, 0);
  const double ref_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();

  std::mt19937 rng(20261130);
  // Kills at a random moment of the first half of a whole run's time: a fresh
  // run always dies, a resumed one when it has enough left to do.
  // A trial that completes shows runs are now faster than the reference was
  // (it may have shared the cores with another test): later kills come sooner.
  double max_delay_ms = ref_ms / 2;
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  int killed = 0, mid_save = 0, completed = 0, trial = 0;
  const auto has_checkpoint = [&] {
    return fs::exists(run / "checkpoint") || fs::exists(run / "checkpoint.tmp") || fs::exists(run / "checkpoint.old");
  };
  for (; killed < 20 && trial < 80; ++trial) {
    const bool resume = has_checkpoint();
    const auto args = resume ? resume_args(run) : train_args(fx.text, run, steps, {"--save-every", "1", "--overwrite"});
    const double wait = max_delay_ms * unit(rng);
    CliProcess p(args, fx / "trial_output.txt");
    std::this_thread::sleep_for(std::chrono::microseconds(int64_t(wait * 1000)));
    p.signal(SIGKILL);
    const int code = p.wait();
    const std::string out = p.output();
    SCOPED_TRACE("trial " + std::to_string(trial) + " after " + std::to_string(wait) + " ms: " + out);
    if (code == 0) {  // it finished first: the whole run must match
      ++completed;
      max_delay_ms *= 0.75;
      expect_same_run(ref, run);
      fs::remove_all(run);
    } else if (code == 1) {  // killed before any save completed, then --resume found none
      EXPECT_NE(out.find("no checkpoint in"), std::string::npos);
      fs::remove_all(run);
    } else {
      ASSERT_EQ(code, 128 + SIGKILL);
      ++killed;
      mid_save += fs::exists(run / "checkpoint.tmp") || fs::exists(run / "checkpoint.old");
    }
  }
  std::printf("[ sigkill ] %d trials: %d killed (%d during a save), %d completed; reference run %.0f ms, last kills "
              "within %.0f ms\n",
              trial, killed, mid_save, completed, ref_ms, max_delay_ms);
  EXPECT_EQ(killed, 20);
  // The last kill may have come before the run's first save was whole (no
  // checkpoint, or only a partial checkpoint.tmp): --resume then finds none,
  // as in the loop, and the run starts anew.
  bool resumed = false;
  if (has_checkpoint()) {
    const auto r = run_cli(resume_args(run), fx.dir.path);
    resumed = r.code == 0;
    if (!resumed) {
      EXPECT_EQ(r.code, 1) << r.out;
      EXPECT_NE(r.out.find("no checkpoint in"), std::string::npos) << r.out;
    }
  }
  if (!resumed)
    ASSERT_EQ(run_cli(train_args(fx.text, run, steps, {"--save-every", "1", "--overwrite"}), fx.dir.path).code, 0);
  expect_same_run(ref, run);
  EXPECT_EQ(losses_only(log_values(run)).size(), size_t(steps));
}

TEST(TrainResumeCli, FullDiskKeepsThePreviousCheckpoint) {
  Fixture fx("resume_fsize");
  const fs::path run = fx / "run";
  ASSERT_EQ(run_cli(train_args(fx.text, run, 4, {"--stop-at", "2"}), fx.dir.path).code, 0);
  std::map<std::string, std::string> before;
  for (const auto& e : fs::directory_iterator(run / "checkpoint")) before[e.path().filename()] = read_bytes(e.path());

  CliOptions small;
  small.max_file_size = 40000;  // the model file is ~90 KB
  auto r = run_cli(resume_args(run), fx.dir.path, small);
  EXPECT_EQ(r.code, 1) << r.out;
  const auto lines = lines_of(r.out);
  ASSERT_FALSE(lines.empty());
  EXPECT_EQ(lines.back().rfind("forge: error: ", 0), 0u) << r.out;
  EXPECT_NE(lines.back().find("File too large"), std::string::npos) << r.out;
  std::map<std::string, std::string> after;
  for (const auto& e : fs::directory_iterator(run / "checkpoint")) after[e.path().filename()] = read_bytes(e.path());
  EXPECT_TRUE(before == after) << "the checkpoint changed";
  EXPECT_FALSE(fs::exists(run / "checkpoint.tmp"));
  r = run_cli(resume_args(run), fx.dir.path);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(checkpoint_step(run), 4);

  // forge init over an existing model: the error, and the old weights kept.
  const fs::path model = fx / "model";
  ASSERT_EQ(run_cli({"init", "--preset", "tiny", "--out", model.string()}, fx.dir.path).code, 0);
  const std::string weights = read_bytes(model / "model.safetensors");
  small.max_file_size = 100000;
  r = run_cli({"init", "--preset", "tiny", "--seed", "5", "--out", model.string()}, fx.dir.path, small);
  EXPECT_EQ(r.code, 1) << r.out;
  ASSERT_EQ(lines_of(r.out).size(), 1u) << r.out;
  EXPECT_NE(r.out.find("forge: error: [safetensors] cannot write"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("File too large"), std::string::npos) << r.out;
  EXPECT_TRUE(read_bytes(model / "model.safetensors") == weights);
  r = run_cli({"init", "--preset", "tiny", "--out", (fx / "new").string()}, fx.dir.path, small);
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_FALSE(fs::exists(fx / "new"));  // no half-written model folder
}
