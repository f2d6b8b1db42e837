// resolve_model: a local path as is, else a hub id through the cache, filled
// from the hub when something is missing and the network is allowed.
#include "forge/hub.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <vector>

#include <nlohmann/json.hpp>

#include "forge/error.h"
#include "hub/hub_cache.h"
#include "hub/hub_fetch.h"

namespace forge {

namespace fs = std::filesystem;
using namespace hub;

namespace {

constexpr const char* kConfig = "config.json";
constexpr const char* kIndex = "model.safetensors.index.json";
constexpr const char* kWeights = "model.safetensors";
// Taken when the repository has them: generation settings, the tokenizer in
// either form, the chat template, LoRA adapters (mlx-lm and PEFT names).
const std::vector<std::string> kOptional = {
    "generation_config.json", "tokenizer.json",       "tokenizer_config.json", "special_tokens_map.json",
    "chat_template.jinja",    "vocab.json",           "merges.txt",            "adapter_config.json",
    "adapters.safetensors",   "adapter_model.safetensors"};

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string();
}

fs::path expand_user(const std::string& p) {
  if (p.rfind("~", 0) == 0 && (p.size() == 1 || p[1] == '/')) return fs::path(env("HOME")) / p.substr(std::min<size_t>(2, p.size()));
  return p;
}

// huggingface_hub's _is_true.
bool env_true(const char* name) {
  std::string v = env(name);
  std::transform(v.begin(), v.end(), v.begin(), [](unsigned char c) { return std::toupper(c); });
  return v == "1" || v == "ON" || v == "YES" || v == "TRUE";
}

bool valid_name_part(const std::string& s) {
  if (s.empty() || s.size() > 96 || s == "." || s == "..") return false;
  return std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isalnum(c) || c == '-' || c == '_' || c == '.'; });
}

// The shard files an index names (sorted, unique).
std::vector<std::string> shards_of(const fs::path& index, const std::string& repo) {
  std::ifstream in(index);
  nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
  if (j.is_discarded() || !j.contains("weight_map") || !j["weight_map"].is_object())
    throw IoError("[hub] " + repo + ": " + index.string() + " is not a safetensors index (no weight_map object)");
  std::set<std::string> files;
  for (const auto& [name, file] : j["weight_map"].items()) {
    if (!file.is_string() || !is_safe_repo_path(file.get<std::string>()))
      throw IoError("[hub] " + repo + ": " + index.string() + " names an unsafe shard path for " + name);
    files.insert(file.get<std::string>());
  }
  return {files.begin(), files.end()};
}

// What a cached snapshot lacks: required files, and optional files of which
// the cache knows neither the contents nor their absence.
struct Gaps {
  std::vector<std::string> missing, unknown;
};

Gaps gaps(const RepoCache& cache, const std::string& commit, const std::string& repo) {
  Gaps g;
  if (!cache.has_file(commit, kConfig)) g.missing.push_back(kConfig);
  if (cache.has_file(commit, kIndex)) {
    for (const auto& shard : shards_of(cache.snapshot(commit) / kIndex, repo))
      if (!cache.has_file(commit, shard)) g.missing.push_back(shard);
  } else if (!cache.has_file(commit, kWeights)) {
    g.missing.push_back(kWeights);
  }
  for (const auto& f : kOptional)
    if (!cache.has_file(commit, f) && !cache.known_missing(commit, f)) g.unknown.push_back(f);
  return g;
}

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

// The file in the snapshot, downloaded if needed; false when the repository
// lacks an optional file (remembered in .no_exist/).
bool ensure(Fetcher& f, const RepoCache& cache, const std::string& commit, const std::string& file, bool required) {
  if (cache.has_file(commit, file)) return true;
  if (!required && cache.known_missing(commit, file)) return false;
  auto meta = f.head(commit, file);
  if (!meta) {
    if (required) throw IoError(f.where(file) + "the repository has no such file (404)");
    cache.mark_missing(commit, file);
    return false;
  }
  f.fetch(file, *meta);
  return true;
}

void fill(Fetcher& f, const RepoCache& cache, const std::string& commit, const std::string& repo) {
  ensure(f, cache, commit, kConfig, true);
  if (ensure(f, cache, commit, kIndex, false)) {
    for (const auto& shard : shards_of(cache.snapshot(commit) / kIndex, repo)) ensure(f, cache, commit, shard, true);
  } else if (!cache.has_file(commit, kWeights)) {
    auto meta = f.head(commit, kWeights);
    if (!meta)
      throw IoError(f.where(kWeights) + "the repository has neither " + kWeights + " nor " + kIndex +
                    " (forge reads safetensors weights only)");
    f.fetch(kWeights, *meta);
  }
  for (const auto& file : kOptional) ensure(f, cache, commit, file, false);
}

}  // namespace

HubOptions HubOptions::from_env() {
  HubOptions o;
  if (!env("HF_ENDPOINT").empty()) o.endpoint = env("HF_ENDPOINT");
  while (!o.endpoint.empty() && o.endpoint.back() == '/') o.endpoint.pop_back();
  fs::path xdg = env("XDG_CACHE_HOME").empty() ? expand_user("~/.cache") : expand_user(env("XDG_CACHE_HOME"));
  fs::path home = env("HF_HOME").empty() ? xdg / "huggingface" : expand_user(env("HF_HOME"));
  if (!env("HF_HUB_CACHE").empty())
    o.cache_dir = expand_user(env("HF_HUB_CACHE"));
  else if (!env("HUGGINGFACE_HUB_CACHE").empty())  // the older name
    o.cache_dir = expand_user(env("HUGGINGFACE_HUB_CACHE"));
  else
    o.cache_dir = home / "hub";
  o.token = env("HF_TOKEN");
  if (o.token.empty()) o.token = env("HUGGING_FACE_HUB_TOKEN");
  if (o.token.empty()) {  // written by `huggingface-cli login`
    std::ifstream in(env("HF_TOKEN_PATH").empty() ? home / "token" : expand_user(env("HF_TOKEN_PATH")));
    std::getline(in, o.token);
  }
  while (!o.token.empty() && std::isspace(static_cast<unsigned char>(o.token.back()))) o.token.pop_back();
  o.offline = env_true("HF_HUB_OFFLINE");
  o.quiet = env_true("HF_HUB_DISABLE_PROGRESS_BARS");
  return o;
}

std::optional<HubSpec> parse_hub_spec(const std::string& spec) {
  auto at = spec.find('@');
  std::string repo = spec.substr(0, at);
  std::string revision = at == std::string::npos ? "main" : spec.substr(at + 1);
  auto slash = repo.find('/');
  if (slash == std::string::npos || !valid_name_part(repo.substr(0, slash)) || !valid_name_part(repo.substr(slash + 1)))
    return std::nullopt;
  if (!is_safe_repo_path(revision) ||
      std::any_of(revision.begin(), revision.end(), [](unsigned char c) { return c <= ' ' || c == 0x7f; }))
    return std::nullopt;
  return HubSpec{repo, revision};
}

fs::path resolve_model(const std::string& spec, const HubOptions& options) {
  std::error_code ec;
  if (!spec.empty() && fs::exists(spec, ec)) return spec;
  auto id = parse_hub_spec(spec);
  if (!id)
    throw IoError("[hub] '" + spec + "' is no file or folder, nor a Hugging Face model id (org/name[@revision])");
  HubOptions opts = options;
  if (opts.cache_dir.empty()) opts.cache_dir = HubOptions::from_env().cache_dir;
  const std::string name = id->repo + "@" + id->revision;
  RepoCache cache(opts.cache_dir, id->repo);

  std::optional<std::string> commit = cache.commit_for(id->revision);
  if (commit) {
    Gaps g = gaps(cache, *commit, name);
    if (g.missing.empty() && (g.unknown.empty() || opts.offline)) return cache.snapshot(*commit);
    if (opts.offline)
      throw IoError("[hub] " + name + " is incomplete in the cache (" + cache.snapshot(*commit).string() +
                    " lacks " + join(g.missing) + ") and HF_HUB_OFFLINE=1 allows no download");
  } else if (opts.offline) {
    throw IoError("[hub] " + name + " is not in the cache (no " + (cache.root() / "refs" / id->revision).string() +
                  ") and HF_HUB_OFFLINE=1 allows no download; no local file or folder '" + spec +
                  "' exists either");
  }

  Progress progress(opts.quiet);
  Fetcher fetcher(opts, id->repo, id->revision, cache, progress);
  try {
    if (!commit) {
      std::optional<FileMeta> meta;
      try {
        meta = fetcher.head(id->revision, kConfig);
      } catch (const IoError& e) {  // perhaps a local path was meant
        throw IoError(std::string(e.what()) + "; no local file or folder '" + spec + "' exists either");
      }
      if (!meta) throw IoError(fetcher.where(kConfig) + "the repository has no such file (404)");
      commit = meta->commit;
      fetcher.fetch(kConfig, *meta);
      cache.write_ref(id->revision, *commit);
    }
    fill(fetcher, cache, *commit, name);
  } catch (const NetworkError& e) {
    // Only optional files were in question: what the cache has is enough.
    if (!commit || !gaps(cache, *commit, name).missing.empty()) throw;
    if (!opts.quiet) std::fprintf(stderr, "%s; using what the cache holds\n", e.what());
  }
  progress.summary(id->repo + "@" + commit->substr(0, 8), cache.snapshot(*commit).string());
  return cache.snapshot(*commit);
}

}  // namespace forge
