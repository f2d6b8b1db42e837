// resolve_model against a local server on 127.0.0.1 that answers the hub's
// resolve URLs as huggingface.co does (X-Repo-Commit, ETag, an LFS redirect
// with X-Linked-Etag / X-Linked-Size, Range requests, X-Error-Code on 404),
// serving the gpt2-tiny fixture. No outside network.
#include <gtest/gtest.h>
#include <httplib.h>
#include <openssl/evp.h>

#include <fcntl.h>
#include <pty.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>

#include "forge/error.h"
#include "forge/gpt2.h"
#include "forge/hub.h"
#include "hub/hub_hash.h"
#include "unit/scoped_env.h"
#include "unit/this_build.h"

namespace fs = std::filesystem;
using namespace forge;

namespace {

const std::string kCommit = "1111111111111111111111111111111111111111";
const std::string kCommitV1 = "2222222222222222222222222222222222222222";

std::string read_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string hex_digest(const EVP_MD* md, const std::string& bytes) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(bytes.data(), bytes.size(), out, &len, md, nullptr);
  std::string s;
  char buf[3];
  for (unsigned int i = 0; i < len; ++i) std::snprintf(buf, sizeof buf, "%02x", out[i]), s += buf;
  return s;
}

std::string git_sha1(const std::string& bytes) {
  std::string prefix = "blob " + std::to_string(bytes.size());
  prefix.push_back('\0');
  return hex_digest(EVP_sha1(), prefix + bytes);
}

struct HubFile {
  std::string bytes;
  bool lfs = false;
  std::string etag() const { return lfs ? hex_digest(EVP_sha256(), bytes) : git_sha1(bytes); }
};

struct Seen {
  std::string method, path, authorization, range;
};

// The hub's answers for a few repositories; knobs to break a download.
class FakeHub {
 public:
  FakeHub() {
    server_.Get(R"(/([^/]+)/([^/]+)/resolve/([^/]+)/(.+))",
                [this](const httplib::Request& q, httplib::Response& r) { resolve(q, r); });
    server_.Get(R"(/lfs/([0-9a-f]{64}))", [this](const httplib::Request& q, httplib::Response& r) { lfs(q, r); });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    while (!server_.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ~FakeHub() { stop(); }
  void stop() {
    server_.stop();
    if (thread_.joinable()) thread_.join();
  }
  std::string endpoint() const { return "http://127.0.0.1:" + std::to_string(port_); }

  // repo -> commit -> file; refs name commits.
  std::map<std::string, std::map<std::string, std::map<std::string, HubFile>>> repos;
  std::map<std::string, std::map<std::string, std::string>> refs;
  std::map<std::string, std::string> gated;  // repo -> the token it wants
  size_t cut_after = 0;                      // LFS bodies break off after this many bytes (0: whole)
  bool corrupt = false;                      // LFS bodies carry one wrong byte

  std::vector<Seen> seen() {
    std::lock_guard<std::mutex> l(mu_);
    return seen_;
  }

 private:
  void record(const httplib::Request& q) {
    std::lock_guard<std::mutex> l(mu_);
    seen_.push_back({q.method, q.path, q.get_header_value("Authorization"), q.get_header_value("Range")});
  }

  void resolve(const httplib::Request& q, httplib::Response& r) {
    record(q);
    std::string repo = std::string(q.matches[1]) + "/" + std::string(q.matches[2]);
    std::string rev = q.matches[3], file = q.matches[4];
    auto error = [&](int status, const std::string& code) {
      r.status = status;
      r.set_header("X-Error-Code", code);
    };
    auto g = gated.find(repo);
    std::string auth = q.get_header_value("Authorization");
    if (g != gated.end() && auth != "Bearer " + g->second) return error(auth.empty() ? 401 : 403, "GatedRepo");
    if (!repos.count(repo)) return error(404, "RepoNotFound");
    std::string commit = refs[repo].count(rev) ? refs[repo][rev] : rev;
    if (!repos[repo].count(commit)) return error(404, "RevisionNotFound");
    auto& files = repos[repo][commit];
    if (!files.count(file)) {
      r.set_header("X-Repo-Commit", commit);
      return error(404, "EntryNotFound");
    }
    const HubFile& f = files[file];
    r.set_header("X-Repo-Commit", commit);
    r.set_header("ETag", "\"" + f.etag() + "\"");
    if (f.lfs) {  // the hub sends LFS files to its storage by an absolute redirect
      r.set_header("X-Linked-Etag", "\"" + f.etag() + "\"");
      r.set_header("X-Linked-Size", std::to_string(f.bytes.size()));
      r.set_redirect(endpoint() + "/lfs/" + f.etag());
      return;
    }
    r.set_content(f.bytes, "application/octet-stream");
  }

  void lfs(const httplib::Request& q, httplib::Response& r) {
    record(q);
    std::string sha = q.matches[1];
    for (auto& [repo, commits] : repos)
      for (auto& [commit, files] : commits)
        for (auto& [name, f] : files)
          if (f.lfs && f.etag() == sha) {
            std::string body = f.bytes;
            if (corrupt) body[body.size() / 2] ^= 0x5a;
            size_t cut = cut_after;
            // httplib answers a Range request with 206 and calls this for the range.
            r.set_content_provider(body.size(), "application/octet-stream",
                                   [body, cut](size_t off, size_t len, httplib::DataSink& sink) {
                                     if (cut && off + len > cut) {
                                       sink.write(body.data() + off, cut > off ? cut - off : 0);
                                       return false;  // close the connection mid-body
                                     }
                                     sink.write(body.data() + off, len);
                                     return true;
                                   });
            return;
          }
    r.status = 404;
  }

  httplib::Server server_;
  std::thread thread_;
  int port_ = 0;
  std::mutex mu_;
  std::vector<Seen> seen_;
};

using forge::testing::ScopedEnv;

class Hub : public ::testing::Test {
 protected:
  void SetUp() override {
    cache_ = fs::temp_directory_path() / ("forge_hub_" + std::to_string(::getpid()) + "_" +
                                          ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(cache_);
    fixture_ = fs::path(forge::testing::test_data_dir()) / "gpt2-tiny";
    auto& main = hub_.repos["org/tiny"][kCommit];
    main["config.json"] = {read_bytes(fixture_ / "config.json"), false};
    main["generation_config.json"] = {read_bytes(fixture_ / "generation_config.json"), false};
    main["model.safetensors"] = {read_bytes(fixture_ / "model.safetensors"), true};
    hub_.refs["org/tiny"]["main"] = kCommit;
    // v1: another commit with its own config and the same weights.
    auto& v1 = hub_.repos["org/tiny"][kCommitV1];
    v1 = main;
    v1["config.json"].bytes += "\n";
    hub_.refs["org/tiny"]["v1"] = kCommitV1;
    opts_.endpoint = hub_.endpoint();
    opts_.cache_dir = cache_;
    opts_.quiet = true;
  }
  void TearDown() override { fs::remove_all(cache_); }

  fs::path repo_dir() const { return cache_ / "models--org--tiny"; }
  std::string sha256_of_weights() const { return hub_.repos.at("org/tiny").at(kCommit).at("model.safetensors").etag(); }

  // The IoError's message from resolve_model; fails the test when none is thrown.
  std::string error_of(const std::string& spec, const HubOptions& o) {
    try {
      resolve_model(spec, o);
    } catch (const IoError& e) {
      return e.what();
    }
    ADD_FAILURE() << spec << " resolved without an error";
    return "";
  }

  FakeHub hub_;
  fs::path cache_, fixture_;
  HubOptions opts_;
};

TEST(HubSpec, ParsesIdsAndRevisions) {
  auto a = parse_hub_spec("org/name");
  ASSERT_TRUE(a);
  EXPECT_EQ(a->repo, "org/name");
  EXPECT_EQ(a->revision, "main");
  auto b = parse_hub_spec("mlx-community/Qwen2.5-0.5B-Instruct-4bit@v1.0");
  ASSERT_TRUE(b);
  EXPECT_EQ(b->repo, "mlx-community/Qwen2.5-0.5B-Instruct-4bit");
  EXPECT_EQ(b->revision, "v1.0");
  for (const char* bad : {"name", "a/b/c", "/abs/path", "org/", "org/..", "org/name@", "org/name@../x", "or g/name",
                          "org/name@a b", "./x"})
    EXPECT_FALSE(parse_hub_spec(bad)) << bad;
}

TEST(HubHash, KnownDigests) {
  fs::path p = fs::temp_directory_path() / ("forge_hub_hash_" + std::to_string(::getpid()));
  std::ofstream(p, std::ios::binary) << "hello\n";
  // `git hash-object` of "hello\n"; sha256 from `sha256sum`.
  EXPECT_EQ(hub::git_blob_sha1_file(p), "ce013625030ba8dba906f756967f9e9ca394464a");
  EXPECT_EQ(hub::sha256_file(p), "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03");
  fs::remove(p);
}

TEST_F(Hub, LocalPathIsReturnedAsIs) {
  EXPECT_EQ(resolve_model(fixture_.string(), opts_), fixture_);
  EXPECT_EQ(resolve_model((fixture_ / "config.json").string(), opts_), fixture_ / "config.json");
  std::string e = error_of("no/such/folder", opts_);
  EXPECT_NE(e.find("no file or folder, nor a Hugging Face model id"), std::string::npos) << e;
  EXPECT_TRUE(hub_.seen().empty());
}

TEST_F(Hub, FirstDownloadLaysOutTheCacheAsHuggingFaceHubAndLoads) {
  opts_.quiet = false;
  ::testing::internal::CaptureStderr();
  fs::path dir = resolve_model("org/tiny", opts_);
  std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(dir, repo_dir() / "snapshots" / kCommit);
  EXPECT_EQ(read_bytes(repo_dir() / "refs" / "main"), kCommit);  // no newline, as huggingface_hub writes it

  for (const auto& [name, f] : hub_.repos["org/tiny"][kCommit]) {
    SCOPED_TRACE(name);
    ASSERT_TRUE(fs::is_symlink(dir / name));
    EXPECT_EQ(fs::read_symlink(dir / name), fs::path("../../blobs") / f.etag());
    EXPECT_EQ(read_bytes(dir / name), read_bytes(fixture_ / name));
    EXPECT_TRUE(fs::is_regular_file(repo_dir() / "blobs" / f.etag()));
  }
  // LFS blobs are named by sha256 (64 hex digits), regular files by git sha1 (40).
  EXPECT_EQ(fs::read_symlink(dir / "model.safetensors").filename().string().size(), 64u);
  EXPECT_EQ(fs::read_symlink(dir / "config.json").filename().string().size(), 40u);
  // Files the repository lacks are remembered as huggingface_hub does.
  EXPECT_TRUE(fs::exists(repo_dir() / ".no_exist" / kCommit / "tokenizer.json"));
  EXPECT_TRUE(fs::exists(repo_dir() / ".no_exist" / kCommit / "model.safetensors.index.json"));
  EXPECT_FALSE(fs::exists(dir / "tokenizer.json"));
  // stderr is not a terminal here: one summary line, no progress bar.
  EXPECT_NE(err.find("[hub] org/tiny@11111111: downloaded 3 files"), std::string::npos) << err;
  EXPECT_EQ(err.find('\r'), std::string::npos) << err;

  // The model loads from the snapshot and computes what the fixture computes.
  Gpt2GenerateOptions g;
  g.max_new_tokens = 4;
  Gpt2 from_hub = Gpt2::load(dir, Device::cpu());
  Gpt2 from_fixture = Gpt2::load(fixture_, Device::cpu());
  EXPECT_EQ(gpt2_generate(from_hub, {1, 2, 3}, g, nullptr), gpt2_generate(from_fixture, {1, 2, 3}, g, nullptr));
}

// With stderr on a terminal, each file gets a progress bar redrawn in place.
TEST_F(Hub, ProgressBarOnATerminal) {
  int master = -1, slave = -1;
  if (openpty(&master, &slave, nullptr, nullptr, nullptr) != 0) GTEST_SKIP() << "no pseudo-terminal here (/dev/pts)";
  std::string shown;
  std::thread reader([&] {
    char buf[4096];
    for (ssize_t n; (n = ::read(master, buf, sizeof buf)) > 0;) shown.append(buf, size_t(n));
  });
  std::fflush(stderr);
  int saved = ::dup(2);
  ::dup2(slave, 2);
  opts_.quiet = false;
  fs::path dir = resolve_model("org/tiny", opts_);
  std::fflush(stderr);
  ::dup2(saved, 2);
  ::close(saved);
  ::close(slave);  // the reader sees the end of the terminal's output
  reader.join();
  ::close(master);
  EXPECT_EQ(read_bytes(dir / "model.safetensors"), read_bytes(fixture_ / "model.safetensors"));
  EXPECT_NE(shown.find("\r\033[K[hub] model.safetensors ["), std::string::npos) << shown;
  EXPECT_NE(shown.find("] 100% "), std::string::npos) << shown;
  EXPECT_NE(shown.find("downloaded 3 files"), std::string::npos) << shown;
}

TEST(HubOptions, ReadsTheEnvironmentAsHuggingFaceHub) {
  fs::path home = fs::temp_directory_path() / ("forge_hub_home_" + std::to_string(::getpid()));
  fs::create_directories(home);
  std::ofstream(home / "token") << "hf_from_file\n";
  ScopedEnv h("HF_HOME", home.c_str()), c("HF_HUB_CACHE", nullptr), c2("HUGGINGFACE_HUB_CACHE", nullptr),
      t("HF_TOKEN", nullptr), t2("HUGGING_FACE_HUB_TOKEN", nullptr), tp("HF_TOKEN_PATH", nullptr),
      e("HF_ENDPOINT", "http://127.0.0.1:1/"), off("HF_HUB_OFFLINE", "0");
  HubOptions o = HubOptions::from_env();
  EXPECT_EQ(o.cache_dir, home / "hub");
  EXPECT_EQ(o.token, "hf_from_file");
  EXPECT_EQ(o.endpoint, "http://127.0.0.1:1");
  EXPECT_FALSE(o.offline);
  {
    ScopedEnv h2("HF_HOME", nullptr), xdg("XDG_CACHE_HOME", nullptr), user("HOME", "/home/someone");
    EXPECT_EQ(HubOptions::from_env().cache_dir, fs::path("/home/someone/.cache/huggingface/hub"));
    EXPECT_EQ(HubOptions::from_env().endpoint, "http://127.0.0.1:1");
  }
  {
    ScopedEnv e2("HF_ENDPOINT", nullptr);
    EXPECT_EQ(HubOptions::from_env().endpoint, "https://huggingface.co");
  }
  fs::remove_all(home);
}

TEST_F(Hub, SecondCallUsesTheCacheWithTheServerStopped) {
  fs::path first = resolve_model("org/tiny", opts_);
  size_t requests = hub_.seen().size();
  hub_.stop();
  EXPECT_EQ(resolve_model("org/tiny", opts_), first);
  EXPECT_EQ(hub_.seen().size(), requests);
}

// A cache another tool filled (snapshot symlinks into blobs/, no .no_exist
// markers): used as it is when the hub is out of reach, and offline.
TEST_F(Hub, CacheFromAnotherToolIsUsedAsItIs) {
  fs::path blobs = repo_dir() / "blobs", snap = repo_dir() / "snapshots" / kCommit;
  fs::create_directories(blobs);
  fs::create_directories(snap);
  fs::create_directories(repo_dir() / "refs");
  std::ofstream(repo_dir() / "refs" / "main") << kCommit;
  for (const char* name : {"config.json", "model.safetensors"}) {
    std::string etag = hub_.repos["org/tiny"][kCommit][name].etag();
    fs::copy_file(fixture_ / name, blobs / etag);
    fs::create_symlink(fs::path("../../blobs") / etag, snap / name);
  }
  hub_.stop();
  opts_.quiet = false;
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(resolve_model("org/tiny", opts_), snap);
  std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("network failure"), std::string::npos) << err;
  EXPECT_NE(err.find("using what the cache holds"), std::string::npos) << err;
  opts_.offline = true;
  EXPECT_EQ(resolve_model("org/tiny", opts_), snap);
  EXPECT_NO_THROW(Gpt2::load(snap, Device::cpu()));
}

TEST_F(Hub, RevisionByBranchAndByCommit) {
  fs::path v1 = resolve_model("org/tiny@v1", opts_);
  EXPECT_EQ(v1, repo_dir() / "snapshots" / kCommitV1);
  EXPECT_EQ(read_bytes(repo_dir() / "refs" / "v1"), kCommitV1);
  EXPECT_EQ(read_bytes(v1 / "config.json"), read_bytes(fixture_ / "config.json") + "\n");
  EXPECT_FALSE(fs::exists(repo_dir() / "refs" / "main"));
  // The weights are one blob for both commits: no second download.
  size_t lfs_gets = 0;
  fs::path by_commit = resolve_model("org/tiny@" + kCommit, opts_);
  EXPECT_EQ(by_commit, repo_dir() / "snapshots" / kCommit);
  EXPECT_FALSE(fs::exists(repo_dir() / "refs" / kCommit));
  for (const auto& s : hub_.seen()) lfs_gets += s.method == "GET" && s.path.rfind("/lfs/", 0) == 0;
  EXPECT_EQ(lfs_gets, 1u);
  EXPECT_EQ(read_bytes(by_commit / "config.json"), read_bytes(fixture_ / "config.json"));
  std::string e = error_of("org/tiny@v9", opts_);
  EXPECT_NE(e.find("no revision 'v9'"), std::string::npos) << e;
}

TEST_F(Hub, OfflineWithoutTheCacheNamesWhatIsMissing) {
  ScopedEnv off("HF_HUB_OFFLINE", "1");
  HubOptions o = HubOptions::from_env();
  EXPECT_TRUE(o.offline);
  o.endpoint = opts_.endpoint;
  o.cache_dir = cache_;
  std::string e = error_of("org/tiny", o);
  EXPECT_NE(e.find("org/tiny@main is not in the cache"), std::string::npos) << e;
  EXPECT_NE(e.find("HF_HUB_OFFLINE=1"), std::string::npos) << e;
  EXPECT_TRUE(hub_.seen().empty());
}

TEST_F(Hub, OfflineWithTheCache) {
  fs::path dir = resolve_model("org/tiny", opts_);
  size_t requests = hub_.seen().size();
  ScopedEnv off("HF_HUB_OFFLINE", "true");
  ScopedEnv cache("HF_HUB_CACHE", cache_.c_str());
  HubOptions o = HubOptions::from_env();
  EXPECT_EQ(o.cache_dir, cache_);
  o.endpoint = opts_.endpoint;
  EXPECT_EQ(resolve_model("org/tiny", o), dir);
  EXPECT_EQ(hub_.seen().size(), requests);
  // A snapshot without its weights is refused by name.
  fs::remove(dir / "model.safetensors");
  std::string e = error_of("org/tiny", o);
  EXPECT_NE(e.find("lacks model.safetensors"), std::string::npos) << e;
}

TEST_F(Hub, InterruptedDownloadResumesWithARangeRequest) {
  const size_t total = hub_.repos["org/tiny"][kCommit]["model.safetensors"].bytes.size();
  hub_.cut_after = total / 3;
  std::string e = error_of("org/tiny", opts_);
  EXPECT_NE(e.find("cannot get model.safetensors of org/tiny@main"), std::string::npos) << e;
  EXPECT_NE(e.find("broke off"), std::string::npos) << e;
  fs::path part = repo_dir() / "blobs" / (sha256_of_weights() + ".incomplete");
  ASSERT_TRUE(fs::exists(part));
  EXPECT_EQ(fs::file_size(part), total / 3);

  hub_.cut_after = 0;
  fs::path dir = resolve_model("org/tiny", opts_);
  EXPECT_EQ(read_bytes(dir / "model.safetensors"), read_bytes(fixture_ / "model.safetensors"));
  EXPECT_FALSE(fs::exists(part));
  std::vector<Seen> ranged;
  for (const auto& s : hub_.seen())
    if (!s.range.empty()) ranged.push_back(s);
  ASSERT_EQ(ranged.size(), 1u);
  EXPECT_EQ(ranged[0].range, "bytes=" + std::to_string(total / 3) + "-");
  EXPECT_EQ(ranged[0].path, "/lfs/" + sha256_of_weights());
}

TEST_F(Hub, CorruptedDownloadIsRefusedAndNotKept) {
  hub_.corrupt = true;
  std::string e = error_of("org/tiny", opts_);
  EXPECT_NE(e.find("cannot get model.safetensors of org/tiny@main: checksum mismatch: sha256"), std::string::npos) << e;
  EXPECT_NE(e.find(sha256_of_weights() + " expected"), std::string::npos) << e;
  EXPECT_FALSE(fs::exists(repo_dir() / "blobs" / sha256_of_weights()));
  EXPECT_FALSE(fs::exists(repo_dir() / "blobs" / (sha256_of_weights() + ".incomplete")));
  EXPECT_FALSE(fs::exists(repo_dir() / "snapshots" / kCommit / "model.safetensors"));

  hub_.corrupt = false;  // the next call downloads it anew
  fs::path dir = resolve_model("org/tiny", opts_);
  EXPECT_EQ(read_bytes(dir / "model.safetensors"), read_bytes(fixture_ / "model.safetensors"));
}

TEST_F(Hub, NotFoundAndAccessDeniedAreClearErrors) {
  std::string e = error_of("org/nothing", opts_);
  EXPECT_NE(e.find("cannot get config.json of org/nothing@main: no such repository on " + hub_.endpoint()),
            std::string::npos) << e;
  EXPECT_NE(e.find("no local file or folder 'org/nothing' exists either"), std::string::npos) << e;

  hub_.repos["org/noweights"][kCommit]["config.json"] = {"{}", false};
  hub_.refs["org/noweights"]["main"] = kCommit;
  e = error_of("org/noweights", opts_);
  EXPECT_NE(e.find("has neither model.safetensors nor model.safetensors.index.json"), std::string::npos) << e;

  hub_.gated["org/tiny"] = "hf_right";
  e = error_of("org/tiny", opts_);
  EXPECT_NE(e.find("access denied (401 GatedRepo)"), std::string::npos) << e;
  EXPECT_NE(e.find("set HF_TOKEN"), std::string::npos) << e;
  opts_.token = "hf_wrong";
  e = error_of("org/tiny", opts_);
  EXPECT_NE(e.find("access denied (403 GatedRepo): the token from HF_TOKEN has no access"), std::string::npos) << e;
  EXPECT_FALSE(fs::exists(repo_dir() / "snapshots"));
}

TEST_F(Hub, TokenIsSent) {
  hub_.gated["org/tiny"] = "hf_right";
  ScopedEnv token("HF_TOKEN", "hf_right");
  HubOptions o = HubOptions::from_env();
  EXPECT_EQ(o.token, "hf_right");
  o.endpoint = opts_.endpoint;
  o.cache_dir = cache_;
  o.quiet = true;
  fs::path dir = resolve_model("org/tiny", o);
  EXPECT_EQ(read_bytes(dir / "model.safetensors"), read_bytes(fixture_ / "model.safetensors"));
  ASSERT_FALSE(hub_.seen().empty());
  for (const auto& s : hub_.seen()) EXPECT_EQ(s.authorization, "Bearer hf_right") << s.method << " " << s.path;
}

TEST_F(Hub, UnreachableHubIsANetworkError) {
  hub_.stop();  // nothing listens on the port any more
  std::string e = error_of("org/tiny", opts_);
  EXPECT_NE(e.find("cannot get config.json of org/tiny@main: network failure"), std::string::npos) << e;
}

TEST_F(Hub, ShardedWeightsFollowTheIndex) {
  auto& files = hub_.repos["org/sharded"][kCommit];
  files["config.json"] = {read_bytes(fixture_ / "config.json"), false};
  files["model.safetensors.index.json"] = {
      R"({"metadata": {}, "weight_map": {"a": "model-00001-of-00002.safetensors", "b": "model-00002-of-00002.safetensors", "c": "model-00001-of-00002.safetensors"}})",
      false};
  files["model-00001-of-00002.safetensors"] = {std::string(3000, 'x'), true};
  files["model-00002-of-00002.safetensors"] = {std::string(2000, 'y'), true};
  files["tokenizer.json"] = {"{}", false};
  hub_.refs["org/sharded"]["main"] = kCommit;
  fs::path dir = resolve_model("org/sharded", opts_);
  for (const auto& [name, f] : files) EXPECT_EQ(read_bytes(dir / name), f.bytes) << name;
  EXPECT_FALSE(fs::exists(dir / "model.safetensors"));

  // An index that points outside the snapshot is refused.
  auto& evil = hub_.repos["org/evil"][kCommit];
  evil["config.json"] = {"{}", false};
  evil["model.safetensors.index.json"] = {R"({"weight_map": {"a": "../../x.safetensors"}})", false};
  hub_.refs["org/evil"]["main"] = kCommit;
  std::string e = error_of("org/evil", opts_);
  EXPECT_NE(e.find("unsafe shard path"), std::string::npos) << e;
}

}  // namespace
