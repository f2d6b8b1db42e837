"""forge's tokenizers and chat templates against Hugging Face tokenizers / transformers
on texts and conversations that no fixture has. For each tokenizer folder of
tests/fixtures (tokenizer-*): ids with and without the special tokens, and the
decoded text with and without them, from `forge tokenize` / `forge detokenize`
beside `tokenizers`; the same for tokenizer.json settings no fixture has (other
pre-tokenizers and Split behaviors, normalizers, post-processors, added-token
flags, Metaspace schemes), made by editing the fixtures' files. For each
template of tests/fixtures/chat-templates: the text `forge chat-template`
renders beside `apply_chat_template` (or both refusing the conversation).
Prints a JSON line per mismatch and a last line of counts.

usage: python3 scripts/hf_text_check.py FORGE   (from the repository root; needs transformers)
"""
import glob, json, os, subprocess, sys, tempfile
from concurrent.futures import ThreadPoolExecutor
from tokenizers import Tokenizer
from transformers import PreTrainedTokenizerFast

forge = sys.argv[1]
tmp = tempfile.mkdtemp()
pool = ThreadPoolExecutor(os.cpu_count() or 4)

TEXTS = [
    "Hello", "HELLO WORLD!!! I'LL BE BACK; YOU'RE RIGHT, WE'VE WON", "don't  won't   can't\tshan't",
    "   ", "\n", "\r\n\r\n", "a\u00a0b\u2009c\u200bd\ufeffe", "x" * 300, "ab" * 150 + " " + "1" * 40,
    "3.14159265358979 2^64 = 18446744073709551616; -0.5e-10", "١٢٣ ४५६ ７８９ Ⅻ ½",
    "Привет, мир! Ελληνικά. עברית وعربي", "한국어 텍스트와 タイ語 ภาษาไทย", "🧑🏽‍💻 ❤️‍🔥 🏳️‍🌈 1️⃣ 🇯🇵🇺🇸",
    "e\u0301 a\u0308 n\u0303 (combining) Å Å", "ﬀ ﬁ ﬂ ㎒ ℌ ①", "tab\there\vvertical\fform feed",
    "<|endoftext|><|endoftext|>", "<|im_start|>system\nYou are helpful.<|im_end|>\n<|im_start|>assistant\n",
    "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nhi<|eot_id|>", "<s>[INST] hi [/INST]</s>",
    "<unk> <0x41> ▁▁ ▁x", "fn main() {\n\tprintln!(\"{}\", 1 + 2);\n}\n", "    indented\n        more\n",
    "https://example.com/path?q=1&r=%20#frag", "email@example.org, @handle #tag $5.00 100%",
    "'s 't 're 've 'm 'll 'd 'S 'T", "A.B.C. U.S.A. e.g. i.e.", "mixed 中文English混合123テスト",
    "trailing space ", " leading", "  two  spaces  ", "\u2028line separator\u2029paragraph",
    "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 𝕞𝕒𝕥𝕙 𐍈 𓀀", "ＡＢＣ ｆｕｌｌｗｉｄｔｈ", "\x01\x02 control \x7f", "...!!!???,,,;;;",
]

CONVERSATIONS = [
    [{"role": "user", "content": "What is 2+2?"}],
    [{"role": "system", "content": "Answer in French."}, {"role": "user", "content": "Hello"},
     {"role": "assistant", "content": "Bonjour"}, {"role": "user", "content": "How are you?"}],
    [{"role": "user", "content": "  spaces around  "}, {"role": "assistant", "content": "ok\n\n"}],
    [{"role": "user", "content": "Unicode: 你好 🤗 naïve"}],
    [{"role": "user", "content": ""}],
    [{"role": "system", "content": "Only a system message."}],
    [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}],
    [{"role": "assistant", "content": "I start."}, {"role": "user", "content": "Fine."}],
    [{"role": "system", "content": "S"}, {"role": "user", "content": "U1"}, {"role": "assistant", "content": "A1"},
     {"role": "user", "content": "U2"}, {"role": "assistant", "content": "A2"}],
    [{"role": "user", "content": "Line one\nLine two\n\nLine four"}],
]
TEMPLATE_KWARGS = {"llama3.2": {"date_string": "26 Jul 2024"}}

bad, checked = 0, 0


def report(**row):
    global bad
    bad += 1
    print(json.dumps(row), flush=True)


def forge_run(args):
    r = subprocess.run([forge] + args, capture_output=True, text=True)
    return r.returncode, r.stdout, r.stderr


def check_text(name, d, tok, i, text):
    """forge's ids and decoded texts for one text beside tokenizers'; the mismatches."""
    out, n = [], 0
    f = os.path.join(tmp, f"{name}-{i}.txt")
    open(f, "w", encoding="utf-8", newline="").write(text)
    for special in (True, False):
        want = tok.encode(text, add_special_tokens=special).ids
        code, stdout, err = forge_run(["tokenize", "--tokenizer", d, "--text-file", f, "--json"]
                                      + ([] if special else ["--no-special"]))
        n += 1
        got = json.loads(stdout)["ids"] if code == 0 else err.strip()
        if got != want:
            out.append(dict(tokenizer=name, text=text, special=special, forge=got, hf=want))
        if not want:
            continue
        for skip in (False, True):
            want_text = tok.decode(want, skip_special_tokens=skip)
            code, stdout, err = forge_run(["detokenize", "--tokenizer", d, "--ids", ",".join(map(str, want)),
                                           "--json"] + (["--skip-special"] if skip else []))
            n += 1
            got_text = json.loads(stdout)["text"] if code == 0 else err.strip()
            if got_text != want_text:
                out.append(dict(tokenizer=name, decode_of=text, skip_special=skip, forge=got_text, hf=want_text))
    return n, out


def check_tokenizer(name, d):
    global checked
    tok = Tokenizer.from_file(os.path.join(d, "tokenizer.json"))
    for n, rows in pool.map(lambda it: check_text(name, d, tok, *it), enumerate(TEXTS)):
        checked += n
        for row in rows:
            report(**row)


def pre_seq(*steps):
    return {"type": "Sequence", "pretokenizers": list(steps)}


BYTE_LEVEL = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}
BYTES_ONLY = dict(BYTE_LEVEL, use_regex=False)
EOT = "<|endoftext|>"


def added(content, id, special, **flags):
    return {"id": id, "content": content, "single_word": flags.get("single_word", False),
            "lstrip": flags.get("lstrip", False), "rstrip": flags.get("rstrip", False),
            "normalized": flags.get("normalized", not special), "special": special}


# tokenizer.json settings no fixture has, made by editing the fixtures' files:
# (name, base fixture, {key: new value} at the top level or a function of the dict)
VARIANTS = [
    ("gpt2-prefix-space", "tokenizer-gpt2", {"pre_tokenizer": dict(BYTE_LEVEL, add_prefix_space=True),
                                             "decoder": dict(BYTE_LEVEL, add_prefix_space=True)}),
    ("gpt2-nfkc-lowercase", "tokenizer-gpt2", {"normalizer": {"type": "Sequence", "normalizers": [
        {"type": "NFKC"}, {"type": "Lowercase"}]}}),
    ("gpt2-nfd-strip", "tokenizer-gpt2", {"normalizer": {"type": "Sequence", "normalizers": [
        {"type": "NFD"}, {"type": "Strip", "strip_left": True, "strip_right": True}]}}),
    ("gpt2-split-removed", "tokenizer-gpt2", {"pre_tokenizer": pre_seq(
        {"type": "Split", "pattern": {"Regex": "\\s+"}, "behavior": "Removed", "invert": False}, BYTES_ONLY)}),
    ("gpt2-split-merged-previous", "tokenizer-gpt2", {"pre_tokenizer": pre_seq(
        {"type": "Split", "pattern": {"Regex": "\\p{P}"}, "behavior": "MergedWithPrevious", "invert": False},
        BYTE_LEVEL)}),
    ("gpt2-split-merged-next", "tokenizer-gpt2", {"pre_tokenizer": pre_seq(
        {"type": "Split", "pattern": {"String": " "}, "behavior": "MergedWithNext", "invert": False}, BYTES_ONLY)}),
    ("gpt2-split-invert", "tokenizer-gpt2", {"pre_tokenizer": pre_seq(
        {"type": "Split", "pattern": {"Regex": "\\p{L}+"}, "behavior": "Isolated", "invert": True}, BYTES_ONLY)}),
    ("gpt2-whitespace", "tokenizer-gpt2", {"pre_tokenizer": pre_seq({"type": "Whitespace"}, BYTES_ONLY)}),
    ("gpt2-punctuation-wssplit", "tokenizer-gpt2", {"pre_tokenizer": pre_seq(
        {"type": "Punctuation", "behavior": "Contiguous"}, {"type": "WhitespaceSplit"}, BYTES_ONLY)}),
    ("gpt2-digits-contiguous", "tokenizer-gpt2", {"pre_tokenizer": pre_seq(
        {"type": "Digits", "individual_digits": False}, BYTE_LEVEL)}),
    ("gpt2-bos-eos-template", "tokenizer-gpt2", {"post_processor": {
        "type": "TemplateProcessing",
        "single": [{"SpecialToken": {"id": EOT, "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                   {"SpecialToken": {"id": EOT, "type_id": 0}}],
        "pair": [{"Sequence": {"id": "A", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}}],
        "special_tokens": {EOT: {"id": EOT, "ids": [50256], "tokens": [EOT]}}}}),
    ("gpt2-roberta", "tokenizer-gpt2", {"post_processor": {
        "type": "RobertaProcessing", "sep": [EOT, 50256], "cls": [EOT, 50256], "trim_offsets": True,
        "add_prefix_space": False}}),
    ("gpt2-bert", "tokenizer-gpt2", {"post_processor": {"type": "BertProcessing", "sep": [EOT, 50256],
                                                         "cls": [EOT, 50256]}}),
    ("gpt2-added-token-flags", "tokenizer-gpt2", lambda t: t["added_tokens"].extend([
        added("<mask>", 50257, True, lstrip=True), added("world", 50258, False, single_word=True),
        added(" spaced", 50259, False, normalized=False), added("[END]", 50260, True, rstrip=True)])),
    ("llama3-merges-kept", "tokenizer-llama3", lambda t: t["model"].update(ignore_merges=False)),
    ("metaspace-always-split", "tokenizer-metaspace", {
        "pre_tokenizer": {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "always", "split": True},
        "decoder": {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "always", "split": True}}),
    ("metaspace-never", "tokenizer-metaspace", {
        "pre_tokenizer": {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "never", "split": False},
        "decoder": {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "never", "split": False}}),
    ("spm-nfkd-no-fuse-unk", "tokenizer-spm", lambda t: (t["model"].update(fuse_unk=False, byte_fallback=False),
                                                       t["normalizer"]["normalizers"].insert(0, {"type": "NFKD"}))),
]

for d in sorted(glob.glob("tests/fixtures/tokenizer-*")):
    if os.path.exists(os.path.join(d, "tokenizer.json")):
        check_tokenizer(os.path.basename(d), d)
for name, base, edit in VARIANTS:
    t = json.load(open(os.path.join("tests/fixtures", base, "tokenizer.json"), encoding="utf-8"))
    if callable(edit):
        edit(t)
    else:
        t.update(edit)
    d = os.path.join(tmp, name)
    os.makedirs(d)
    json.dump(t, open(os.path.join(d, "tokenizer.json"), "w", encoding="utf-8"), ensure_ascii=False)
    try:
        Tokenizer.from_file(os.path.join(d, "tokenizer.json"))
    except Exception as e:  # a setting this tokenizers version does not take: nothing to compare with
        print(json.dumps({"tokenizer": name, "hf_error": str(e)[:200]}), flush=True)
        continue
    check_tokenizer(name, d)

tok_file = "tests/fixtures/tokenizer-smollm2/tokenizer.json"
for f in sorted(glob.glob("tests/fixtures/chat-templates/*.json")):
    name = os.path.basename(f)[:-len(".json")]
    fx = json.load(open(f, encoding="utf-8"))
    tmpl_file = os.path.join(tmp, name + ".jinja")
    open(tmpl_file, "w", encoding="utf-8").write(fx["template"])
    ht = PreTrainedTokenizerFast(tokenizer_file=tok_file, bos_token=fx["bos_token"], eos_token=fx["eos_token"],
                                 chat_template=fx["template"])
    kw = TEMPLATE_KWARGS.get(name, {})

    def render(item):
        i, conv, agp = item
        try:
            want = ht.apply_chat_template(conv, tokenize=False, add_generation_prompt=agp, **kw)
        except Exception:
            want = None
        mf = os.path.join(tmp, f"{name}-c{i}.json")
        json.dump(conv, open(mf, "w", encoding="utf-8"), ensure_ascii=False)
        args = ["chat-template", "--template-file", tmpl_file, "--messages-file", mf, "--json"]
        for key, flag in (("bos_token", "--bos-token"), ("eos_token", "--eos-token")):
            if fx.get(key) is not None:
                args += [flag, fx[key]]
        for k, v in kw.items():
            args += ["--define", f"{k}={json.dumps(v)}"]
        if agp:
            args.append("--add-generation-prompt")
        code, out, err = forge_run(args)
        got = json.loads(out)["text"] if code == 0 else None
        if got == want:
            return None
        return dict(template=name, conversation=i, add_generation_prompt=agp,
                    forge=got if code == 0 else err.strip(), hf=want)

    items = [(i, conv, agp) for i, conv in enumerate(CONVERSATIONS) for agp in (True, False)]
    for row in list(map(render, items)):
        checked += 1
        if row:
            report(**row)
print(json.dumps({"checked": checked, "mismatches": bad}))
