// Continuous batching in the model layer (the Llama family and GPT-2):
// sequences that join a KV cache's rows at different steps and decode
// together (decode_rows, one batched forward per step) produce the greedy
// tokens of each sequence decoded alone (forward_cached), with logits within
// a stated tolerance, on every backend.
#include <gtest/gtest.h>

#include <map>

#include "forge/generate.h"
#include "forge/model.h"
#include "forge/ops.h"
#include "parity/parity.h"
#include "unit/this_build.h"

using namespace forge;

namespace {

std::filesystem::path fixture(const char* name) {
  return std::filesystem::path(forge::testing::test_data_dir()) / name;
}

uint32_t argmax(const std::vector<float>& v, size_t begin, size_t n) {
  size_t best = begin;
  for (size_t i = begin; i < begin + n; ++i)
    if (v[i] > v[best]) best = i;
  return uint32_t(best - begin);
}

struct Seq {
  std::vector<uint32_t> prompt;
  int64_t join;  // the decode step before which it joins
  int64_t steps;
};

// Runs `seqs` through one row cache as a server would: a sequence joins the
// lowest free row, rows 0 .. highest busy row decode together (a free row in
// between steps a dummy token at position 0), a sequence leaves after its
// steps. Returns each sequence's greedy ids and the logits of every step.
void run_batched(const CausalLM& m, const std::vector<Seq>& seqs, int64_t rows,
                 std::vector<std::vector<uint32_t>>& ids, std::vector<std::vector<std::vector<float>>>& logits) {
  const int64_t V = m.vocab_size();
  KvCache cache = m.new_row_cache(rows, 48);
  std::vector<int> owner(size_t(rows), -1);
  std::vector<int64_t> pos(size_t(rows), 0);
  std::vector<uint32_t> last(size_t(rows), 0);
  ids.assign(seqs.size(), {});
  logits.assign(seqs.size(), {});
  size_t done = 0;
  for (int64_t step = 0; done < seqs.size(); ++step) {
    for (size_t s = 0; s < seqs.size(); ++s) {
      if (seqs[s].join != step) continue;
      int64_t r = 0;
      while (r < rows && owner[size_t(r)] >= 0) ++r;
      ASSERT_LT(r, rows);
      const auto& p = seqs[s].prompt;
      std::vector<float> l = m.prefill_row(Tensor::from_vector(p, {1, int64_t(p.size())}), cache, r).to_f32();
      owner[size_t(r)] = int(s);
      pos[size_t(r)] = int64_t(p.size());
      last[size_t(r)] = argmax(l, 0, size_t(V));
      ids[s].push_back(last[size_t(r)]);
      logits[s].push_back(l);
    }
    int64_t n = 0;
    for (int64_t r = 0; r < rows; ++r)
      if (owner[size_t(r)] >= 0) n = r + 1;
    if (n == 0) continue;
    std::vector<uint32_t> in(static_cast<size_t>(n), 0);
    std::vector<int64_t> at(static_cast<size_t>(n), 0);
    for (int64_t r = 0; r < n; ++r) {
      in[size_t(r)] = owner[size_t(r)] >= 0 ? last[size_t(r)] : 0;
      at[size_t(r)] = owner[size_t(r)] >= 0 ? pos[size_t(r)] : 0;
    }
    std::vector<float> l = m.decode_rows(Tensor::from_vector(in, {n, 1}), cache, at).to_f32();
    for (int64_t r = 0; r < n; ++r) {
      const int s = owner[size_t(r)];
      if (s < 0) continue;
      last[size_t(r)] = argmax(l, size_t(r * V), size_t(V));
      ids[size_t(s)].push_back(last[size_t(r)]);
      logits[size_t(s)].emplace_back(l.begin() + r * V, l.begin() + (r + 1) * V);
      ++pos[size_t(r)];
      if (int64_t(ids[size_t(s)].size()) > seqs[size_t(s)].steps) {
        owner[size_t(r)] = -1;
        ++done;
      }
    }
  }
}

void check_family(const char* name) {
  // Joins at different steps, a short one that leaves early (its row is then
  // reused), a one-token prompt.
  // Row 1 leaves after one step and stays free (a dummy row below a busy
  // one) until a sequence joins at step 3.
  const std::vector<Seq> seqs = {{{5, 17, 230, 9, 41, 2}, 0, 6},
                                 {{77, 3, 150}, 0, 1},
                                 {{300, 12, 19, 66, 4, 4, 90, 101, 7, 13, 1, 2}, 0, 5},
                                 {{8}, 3, 2},
                                 {{42, 43}, 4, 2}};
  for (const Device& dev : forge::testing::test_devices()) {
    const float atol = dev.is_cpu() ? 1e-4f : 1e-3f;
    auto m = load_model(fixture(name), dev);
    ASSERT_TRUE(m->has_row_decode());
    std::vector<std::vector<uint32_t>> ids;
    std::vector<std::vector<std::vector<float>>> logits;
    run_batched(*m, seqs, 4, ids, logits);
    for (size_t s = 0; s < seqs.size(); ++s) {
      // Alone: forward_cached over the same sequence, step by step.
      const int64_t V = m->vocab_size();
      KvCache c = m->new_cache(1, 48);
      const auto& p = seqs[s].prompt;
      std::vector<float> l = m->forward_cached(Tensor::from_vector(p, {1, int64_t(p.size())}), c).to_f32();
      for (size_t t = 0; t < ids[s].size(); ++t) {
        const uint32_t want = argmax(l, 0, size_t(V));
        ASSERT_EQ(ids[s][t], want) << name << " sequence " << s << " token " << t << " on " << dev.name();
        float worst = 0;
        for (size_t i = 0; i < size_t(V); ++i) worst = std::max(worst, std::abs(l[i] - logits[s][t][i]));
        EXPECT_LE(worst, atol) << name << " sequence " << s << " token " << t << " on " << dev.name();
        l = m->forward_cached(Tensor::from_vector(std::vector<uint32_t>{want}, {1, 1}), c).to_f32();
      }
      EXPECT_EQ(int64_t(ids[s].size()), seqs[s].steps + 1);
    }
  }
}

}  // namespace

TEST(RowDecode, LlamaBatchedEqualsAloneOnEveryBackend) { check_family("llama-tiny"); }
TEST(RowDecode, Qwen2BatchedEqualsAloneOnEveryBackend) { check_family("qwen2-tiny"); }

TEST(RowDecode, KvAppendRowsWritesEachRowAtItsSlot) {
  for (const Device& dev : forge::testing::test_devices()) {
    Tensor cache = Tensor::zeros({3, 4, 2}, DType::F32, dev);  // [rows, cap, D]
    Tensor src = Tensor::from_vector(std::vector<float>{1, 2, 3, 4}, {2, 1, 2}, dev);
    kv_append_rows(cache, src, 1, {3, 0});
    std::vector<float> want(24, 0.0f);
    want[(1 * 4 + 3) * 2] = 1, want[(1 * 4 + 3) * 2 + 1] = 2, want[(2 * 4 + 0) * 2] = 3, want[(2 * 4 + 0) * 2 + 1] = 4;
    EXPECT_EQ(cache.to_f32(), want) << dev.name();
    EXPECT_THROW(kv_append_rows(cache, src, 2, {0, 0}), ValueError);  // rows 2..3 of 3
    EXPECT_THROW(kv_append_rows(cache, src, 0, {4, 0}), ValueError);  // slot 4 of 4
    EXPECT_THROW(kv_append_rows(cache, src, 0, {0}), ValueError);     // one position for two rows
  }
}

TEST(RowDecode, KvAppendTokensWritesEverySequenceAtOneSlot) {
  for (const Device& dev : forge::testing::test_devices()) {
    Tensor cache = Tensor::zeros({2, 5, 2, 3}, DType::F32, dev);  // [B, cap, heads, hd]
    std::vector<float> v(24);
    for (size_t i = 0; i < v.size(); ++i) v[i] = float(i + 1);
    Tensor src = Tensor::from_vector(v, {2, 2, 2, 3}, dev);  // [B, t, heads, hd]
    kv_append_tokens(cache, src, 3);
    std::vector<float> want(60, 0.0f);
    for (int b = 0; b < 2; ++b)
      for (int i = 0; i < 12; ++i) want[size_t((b * 5 + 3) * 6 + i)] = v[size_t(b * 12 + i)];
    EXPECT_EQ(cache.to_f32(), want) << dev.name();
    EXPECT_THROW(kv_append_tokens(cache, src, 4), ValueError);  // slots 4..5 of 5
    EXPECT_THROW(kv_append_tokens(cache, Tensor::zeros({2, 1, 3, 3}, DType::F32, dev), 0), ShapeError);
    EXPECT_THROW(kv_append_tokens(cache, Tensor::zeros({1, 1, 2, 3}, DType::F32, dev), 0), ShapeError);
  }
}

TEST(RowDecode, Gpt2BatchedEqualsAloneOnEveryBackend) { check_family("gpt2-tiny"); }

TEST(RowDecode, Gpt2RowsTakeATokenMajorCache) {
  auto m = load_model(fixture("gpt2-tiny"), Device::cpu());
  // A head-major cache [B, n_head, cap, hd] (gpt2-tiny: 2 layers, 2 heads of 16).
  KvCache heads;
  for (int l = 0; l < 2; ++l) {
    heads.k.push_back(Tensor::zeros({2, 2, 8, 16}));
    heads.v.push_back(Tensor::zeros({2, 2, 8, 16}));
  }
  heads.capacity = 8;
  heads.batch = 2;
  const Tensor one = Tensor::from_vector(std::vector<uint32_t>{1}, {1, 1});
  EXPECT_THROW(m->decode_rows(one, heads, {0}), ShapeError);
  EXPECT_THROW(m->prefill_row(one, heads, 0), ShapeError);
  KvCache rows = m->new_row_cache(2, 8);
  // forward_cached's cache has the rows' layout.
  EXPECT_EQ(m->new_cache(2, 8).k[0].shape(), rows.k[0].shape());
  EXPECT_THROW(m->prefill_row(one, rows, 2), ValueError);  // row 2 of 2
  EXPECT_THROW(m->prefill_row(Tensor::from_vector(std::vector<uint32_t>(9, 1), {1, 9}), rows, 0), ValueError);
  EXPECT_THROW(m->decode_rows(one, rows, {8}), ValueError);  // position 8 of capacity 8
}
