"""forge's tokenizers and chat templates against Hugging Face tokenizers / transformers
on texts and conversations that no fixture has. For each tokenizer folder of
tests/fixtures (tokenizer-*): ids with and without the special tokens, and the
decoded text with and without them, from `forge tokenize` / `forge detokenize`
beside `tokenizers`. For each template of tests/fixtures/chat-templates: the text
`forge chat-template` renders beside `apply_chat_template` (or both refusing the
conversation). Prints a JSON line per mismatch and a last line of counts.

usage: python3 scripts/hf_text_check.py FORGE   (from the repository root; needs transformers)
"""
import glob, json, os, subprocess, sys, tempfile
from tokenizers import Tokenizer
from transformers import PreTrainedTokenizerFast

forge = sys.argv[1]
tmp = tempfile.mkdtemp()

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
    print(json.dumps(row, ensure_ascii=False), flush=True)


def forge_run(args):
    r = subprocess.run([forge] + args, capture_output=True, text=True)
    return r.returncode, r.stdout, r.stderr


for d in sorted(glob.glob("tests/fixtures/tokenizer-*")):
    name = os.path.basename(d)
    path = os.path.join(d, "tokenizer.json")
    if not os.path.exists(path):
        continue
    tok = Tokenizer.from_file(path)
    for i, text in enumerate(TEXTS):
        f = os.path.join(tmp, f"t{i}.txt")
        open(f, "w", encoding="utf-8", newline="").write(text)
        for special in (True, False):
            want = tok.encode(text, add_special_tokens=special).ids
            code, out, err = forge_run(["tokenize", "--tokenizer", d, "--text-file", f, "--json"]
                                       + ([] if special else ["--no-special"]))
            checked += 1
            got = json.loads(out)["ids"] if code == 0 else err.strip()
            if got != want:
                report(tokenizer=name, text=text, special=special, forge=got, hf=want)
            if not want:
                continue
            for skip in (False, True):
                want_text = tok.decode(want, skip_special_tokens=skip)
                code, out, err = forge_run(["detokenize", "--tokenizer", d, "--ids", ",".join(map(str, want)),
                                            "--json"] + (["--skip-special"] if skip else []))
                checked += 1
                got_text = json.loads(out)["text"] if code == 0 else err.strip()
                if got_text != want_text:
                    report(tokenizer=name, decode_of=text, skip_special=skip, forge=got_text, hf=want_text)

tok_file = "tests/fixtures/tokenizer-smollm2/tokenizer.json"
for f in sorted(glob.glob("tests/fixtures/chat-templates/*.json")):
    name = os.path.basename(f)[:-len(".json")]
    fx = json.load(open(f, encoding="utf-8"))
    tmpl_file = os.path.join(tmp, name + ".jinja")
    open(tmpl_file, "w", encoding="utf-8").write(fx["template"])
    ht = PreTrainedTokenizerFast(tokenizer_file=tok_file, bos_token=fx["bos_token"], eos_token=fx["eos_token"],
                                 chat_template=fx["template"])
    kw = TEMPLATE_KWARGS.get(name, {})
    for i, conv in enumerate(CONVERSATIONS):
        mf = os.path.join(tmp, f"c{i}.json")
        json.dump(conv, open(mf, "w", encoding="utf-8"), ensure_ascii=False)
        for agp in (True, False):
            try:
                want = ht.apply_chat_template(conv, tokenize=False, add_generation_prompt=agp, **kw)
            except Exception as e:
                want = None
            args = ["chat-template", "--template-file", tmpl_file, "--messages-file", mf, "--json"]
            for key, flag in (("bos_token", "--bos-token"), ("eos_token", "--eos-token")):
                if fx.get(key) is not None:
                    args += [flag, fx[key]]
            for k, v in kw.items():
                args += ["--define", f"{k}={json.dumps(v)}"]
            if agp:
                args.append("--add-generation-prompt")
            code, out, err = forge_run(args)
            checked += 1
            got = json.loads(out)["text"] if code == 0 else None
            if got != want:
                report(template=name, conversation=i, add_generation_prompt=agp, forge=got if code == 0 else err.strip(),
                       hf=want)
print(json.dumps({"checked": checked, "mismatches": bad}))
