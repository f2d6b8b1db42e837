// The Jinja interpreter construct by construct. Expected outputs are written
// from jinja2's semantics with transformers' settings (trim_blocks,
// lstrip_blocks, loop controls, json.dumps tojson); every row also renders the
// same under Python's jinja2 3.1.
#include <gtest/gtest.h>

#include <string>

#include "forge/chat_template.h"

namespace {

using ojson = nlohmann::ordered_json;

struct Row {
  const char* name;
  const char* source;
  const char* vars;  // JSON object of extra variables
  const char* want;
};

const Row kRows[] = {
    {"IfElifElse",
     "{% if x == 1 %}one{% elif x == 2 %}two{% else %}other{% endif %}",
     R"j({"x": 2})j",
     "two"},
    {"IfElse",
     "{% if x %}yes{% else %}no{% endif %}",
     R"j({"x": []})j",
     "no"},
    {"ForLoopVariables",
     "{% for x in xs %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}{{ loop.first }}{{ loop.last }}{{ loop.length }};{% endfor %}",
     R"j({"xs": ["a", "b"]})j",
     "102TrueFalse2;211FalseTrue2;"},
    {"ForElse",
     "{% for x in xs %}{{ x }}{% else %}empty{% endfor %}",
     R"j({"xs": []})j",
     "empty"},
    {"ForFilter",
     "{% for x in xs if x > 1 %}{{ x }}/{{ loop.length }} {% endfor %}",
     R"j({"xs": [1, 2, 3]})j",
     "2/2 3/2 "},
    {"ForItemsUnpacking",
     "{% for k, v in d.items() %}{{ k }}={{ v }},{% endfor %}",
     R"j({"d": {"b": 1, "a": 2}})j",
     "b=1,a=2,"},
    {"ForOverDictKeys",
     "{% for k in d %}{{ k }}{% endfor %}",
     R"j({"d": {"x": 1, "y": 2}})j",
     "xy"},
    {"ForBreakContinue",
     "{% for x in range(10) %}{% if x == 1 %}{% continue %}{% endif %}{% if x == 4 %}{% break %}{% endif %}{{ x }}{% endfor %}",
     R"j({})j",
     "023"},
    {"LoopScopeDoesNotLeak",
     "{% set n = 0 %}{% for x in [1, 2] %}{% set n = n + x %}{% endfor %}{{ n }}",
     R"j({})j",
     "0"},
    {"NamespaceCarriesOut",
     "{% set ns = namespace(n=0, s='') %}{% for x in [1, 2, 3] %}{% set ns.n = ns.n + x %}{% endfor %}{{ ns.n }}",
     R"j({})j",
     "6"},
    {"SetTupleAndBlock",
     "{% set a, b = 1, 2 %}{% set t %}[{{ a + b }}]{% endset %}{{ t }}{{ t | length }}",
     R"j({})j",
     "[3]3"},
    {"MacroWithDefaults",
     "{% macro greet(name, punct='!') %}Hi {{ name }}{{ punct }}{% endmacro %}{{ greet('Ann') }} {{ greet('Bo', punct='?') }}",
     R"j({})j",
     "Hi Ann! Hi Bo?"},
    {"MacroRecursion",
     "{% macro fact(n) %}{% if n <= 1 %}1{% else %}{{ n * fact(n - 1) | int }}{% endif %}{% endmacro %}{{ fact(5) }}",
     R"j({})j",
     "120"},
    {"WhitespaceMinus",
     "a  {%- if true -%}  b  {%- endif -%}  c",
     R"j({})j",
     "abc"},
    {"VariableMinus",
     "a {{- 'b' -}} c",
     R"j({})j",
     "abc"},
    {"TrimBlocks",
     "{% if true %}\nx\n{% endif %}\ny",
     R"j({})j",
     "x\ny"},
    {"LstripBlocks",
     "<\n    {% if true %}\n    x\n    {% endif %}\n>",
     R"j({})j",
     "<\n    x\n>"},
    {"LstripNotForVariables",
     "<\n    {{ 'x' }}\n>",
     R"j({})j",
     "<\n    x\n>"},
    {"PlusKeepsIndent",
     "<\n  {%+ if true %}x{% endif %}>",
     R"j({})j",
     "<\n  x>"},
    {"CommentsTrimmed",
     "a\n  {# note #}\nb",
     R"j({})j",
     "a\nb"},
    {"TrailingNewlineDropped",
     "x\n",
     R"j({})j",
     "x"},
    {"RawBlock",
     "{% raw %}{{ not evaluated }}{% endraw %}",
     R"j({})j",
     "{{ not evaluated }}"},
    {"RawWhitespace",
     "{% for i in [1, 2] %}\n  {{- i -}}  {%- raw -%} b \n  \t  {% endraw %}  \n\n{%- endfor +%}\n",
     R"j({})j",
     "1b \n2b \n"},
    {"EndrawPlusKeepsNewline",
     "{% raw %}x{% endraw +%}\ny",
     R"j({})j",
     "x\ny"},
    {"CommentMinusAndPlus",
     "a \n{#- c -#}\n b\n  {#+ d #}\nc",
     R"j({})j",
     "ab\n  c"},
    {"Arithmetic",
     "{{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % 3 }} {{ -7 % 3 }} {{ 7 / 2 }} {{ 2 ** 10 }} {{ 1 + 2 * 3 }} {{ (1 + 2) * 3 }} {{ 0.1 + 0.2 }}",
     R"j({})j",
     "3 -4 1 2 3.5 1024 7 9 0.30000000000000004"},
    {"Comparisons",
     "{{ 1 < 2 < 3 }} {{ 'a' < 'b' }} {{ 1 == 1.0 }} {{ 'x' in 'xyz' }} {{ 2 not in [1, 3] }} {{ 'k' in {'k': 1} }}",
     R"j({})j",
     "True True True True True True"},
    {"LogicReturnsOperands",
     "{{ none or 'fallback' }} {{ 'a' and 'b' }} {{ not 0 }}",
     R"j({})j",
     "fallback b True"},
    {"Concatenation",
     "{{ 'a' ~ 1 ~ none }} {{ 'a' + 'b' }} {{ [1] + [2] }}",
     R"j({})j",
     "a1None ab [1, 2]"},
    {"Ternary",
     "{{ 'yes' if x else 'no' }}|{{ 'only' if false }}|",
     R"j({"x": 1})j",
     "yes||"},
    {"Literals",
     "{{ [1, 'a', none, true, 1.5] }} {{ {'k': [1, 2]} }} {{ (1, 'b') }}",
     R"j({})j",
     "[1, 'a', None, True, 1.5] {'k': [1, 2]} (1, 'b')"},
    {"AttributeAndSubscript",
     "{{ m.role }} {{ m['content'] }} {{ xs[-1] }} {{ xs[5] }}|{{ m.missing }}|",
     R"j({"m": {"role": "user", "content": "hi"}, "xs": [1, 2, 3]})j",
     "user hi 3 ||"},
    {"Slicing",
     "{{ xs[1:] }} {{ xs[:-1] }} {{ xs[::-1] }} {{ xs[::2] }} {{ 'hello'[1:3] }} {{ 'abc'[::-1] }} {{ xs[-2::-1] }}",
     R"j({"xs": [1, 2, 3, 4]})j",
     "[2, 3, 4] [1, 2, 3] [4, 3, 2, 1] [1, 3] el cba [3, 2, 1]"},
    {"UnicodeSlicing",
     "{{ s[1:] }}{{ s | length }}",
     R"j({"s": "été"})j",
     "té3"},
    {"StringFilters",
     "{{ '  x  ' | trim }}|{{ 'ab' | upper }}|{{ 'AB' | lower }}|{{ 'hello world' | capitalize }}|{{ 'hello world' | title }}|{{ 'aXa' | replace('a', 'b') }}",
     R"j({})j",
     "x|AB|ab|Hello world|Hello World|bXb"},
    {"DefaultFilter",
     "{{ missing | default('d') }} {{ '' | default('e', true) }} {{ '' | default('f') }}|",
     R"j({})j",
     "d e |"},
    {"LengthJoinString",
     "{{ xs | length }} {{ xs | join(', ') }} {{ 3 | string + '!' }} {{ d | length }}",
     R"j({"xs": ["a", "b"], "d": {"k": 1}})j",
     "2 a, b 3! 1"},
    {"ItemsFilter",
     "{% for k, v in d | items %}{{ k }}{{ v }}{% endfor %}",
     R"j({"d": {"a": 1, "b": 2}})j",
     "a1b2"},
    {"SelectattrRejectattrMap",
     "{{ ms | selectattr('role', 'equalto', 'user') | map(attribute='content') | join(',') }} {{ ms | rejectattr('role', 'eq', 'user') | map(attribute='content') | list }} {{ ms | selectattr('tool') | list | length }}",
     R"j({"ms": [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b", "tool": 1}, {"role": "user", "content": "c"}]})j",
     "a,c ['b'] 1"},
    {"FirstLastListInt",
     "{{ xs | first }} {{ xs | last }} {{ 'ab' | list }} {{ '42' | int + 1 }} {{ 3.9 | int }} {{ 'x' | int }}",
     R"j({"xs": [1, 2, 3]})j",
     "1 3 ['a', 'b'] 43 3 0"},
    {"ToJson",
     "{{ v | tojson }}",
     R"j({"v": {"b": [1, 2.5, null, true], "a": "é\"\n"}})j",
     "{\"b\": [1, 2.5, null, true], \"a\": \"é\\\"\\n\"}"},
    {"ToJsonIndent",
     "{{ v | tojson(indent=2) }}",
     R"j({"v": {"k": [1, {}], "e": []}})j",
     "{\n  \"k\": [\n    1,\n    {}\n  ],\n  \"e\": []\n}"},
    {"Tests",
     "{{ x is defined }}{{ y is undefined }}{{ n is none }}{{ 's' is string }}{{ d is mapping }}{{ xs is iterable }}{{ xs is sequence }}{{ 1.5 is number }}{{ true is boolean }}{{ 3 is equalto 3 }}{{ 3 is eq(4) }}{{ 's' is not string }}",
     R"j({"x": 1, "n": null, "d": {}, "xs": []})j",
     "TrueTrueTrueTrueTrueTrueTrueTrueTrueTrueFalseFalse"},
    {"StringMethods",
     "{{ s.startswith('He') }} {{ s.endswith('!') }} {{ '  p '.strip() }}|{{ 'xxpxx'.lstrip('x') }}|{{ 'xxpxx'.rstrip('x') }}|{{ 'a b  c'.split() }} {{ 'a,b'.split(',') }} {{ s.replace('l', 'L') }} {{ s.upper() }} {{ s.lower() }} {{ 'ab cd'.title() }}",
     R"j({"s": "Hello!"})j",
     "True True p|pxx|xxp|['a', 'b', 'c'] ['a', 'b'] HeLLo! HELLO! hello! Ab Cd"},
    {"DictMethods",
     "{{ d.get('a') }} {{ d.get('z', 'no') }} {{ d.get('z') }} {{ d.keys() | list }} {{ d.values() | list }} {{ d.items() | list }}",
     R"j({"d": {"a": 1}})j",
     "1 no None ['a'] [1] [('a', 1)]"},
    {"UndefinedIsEmptyAndFalsy",
     "[{{ nothing }}]{% if nothing %}t{% else %}f{% endif %}{{ nothing is defined }}{% for x in nothing %}x{% endfor %}",
     R"j({})j",
     "[]fFalse"},
    {"PrintsPythonValues",
     "{{ true }} {{ none }} {{ 1.0 }} {{ 1e20 }} {{ 2.5e-7 }} {{ -0.0 }} {{ 'it\\'s' }}",
     R"j({})j",
     "True None 1.0 1e+20 2.5e-07 -0.0 it's"},
    {"UnicodeCase",
     "{{ s.upper() }} {{ s.lower() }} {{ s.title() }} {{ s | capitalize }} {{ s | upper }}",
     R"j({"s": "éTÉ слово άλφα straße"})j",
     "ÉTÉ СЛОВО ΆΛΦΑ STRASSE été слово άλφα straße Été Слово Άλφα Straße Été слово άλφα straße ÉTÉ СЛОВО ΆΛΦΑ STRASSE"},
    {"TitleFilterIsNotStrTitle",
     "{{ s | title }}|{{ s.title() }}",
     R"j({"s": "they're a1b half-done (ok)"})j",
     "They're A1b Half-Done (Ok)|They'Re A1B Half-Done (Ok)"},
    {"OddEvenDivisible",
     "{{ 3 is odd }}{{ 4 is even }}{{ 2.0 is even }}{{ 9 is divisibleby 3 }}{{ -3 is odd }}",
     R"j({})j",
     "TrueTrueTrueTrueTrue"},
    {"SortUniqueMinMax",
     "{{ xs | sort }} {{ xs | sort(reverse=true) }} {{ ws | sort }} {{ ws | sort(case_sensitive=true) }} {{ ms | sort(attribute='n') | map(attribute='k') | join }} {{ ws | unique | list }} {{ xs | min }} {{ xs | max }} {{ ms | max(attribute='n') }}",
     R"j({"xs": [3, 1, 2, 1], "ws": ["b", "A", "a", "C"], "ms": [{"k": "x", "n": 2}, {"k": "y", "n": 1}, {"k": "z", "n": 2}]})j",
     "[1, 1, 2, 3] [3, 2, 1, 1] ['A', 'a', 'b', 'C'] ['A', 'C', 'a', 'b'] yxz ['b', 'A', 'C'] 1 3 {'k': 'x', 'n': 2}"},
    {"SumRound",
     "{{ [1, 2, 3] | sum }} {{ ms | sum(attribute='n') }} {{ [0.5, 1] | sum(start=1) }} {{ 2.5 | round }} {{ 3.5 | round }} {{ 2.345 | round(1) }} {{ 2.31 | round(1, 'ceil') }} {{ 7 | round }}",
     R"j({"ms": [{"n": 2}, {"n": 5}]})j",
     "6 7 2.5 2.0 4.0 2.3 2.4 7"},
    {"LowerUpperTests",
     "{{ 'ab' is lower }}{{ '' is lower }}{{ 'A1' is upper }}{{ '1' is upper }}{{ 'aB' is lower }}",
     R"j({})j",
     "TrueFalseTrueFalseFalse"},
    {"FilterPrecedence",
     "{{ 'a' + ' b ' | trim }} {{ -3 | abs }} {{ [1,2] | length * 2 }}",
     R"j({})j",
     "ab 3 4"},

};

std::string render(const std::string& source, const std::string& vars = "{}") {
  return forge::render_chat_template(source, ojson::array(), false, std::nullopt, std::nullopt, ojson::parse(vars));
}

// The TemplateError message of rendering `source` ("" when it renders).
std::string error_of(const std::string& source, const std::string& vars = "{}") {
  try {
    render(source, vars);
  } catch (const forge::TemplateError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(JinjaConstructs, EachRowRendersAsJinja2) {
  for (const Row& r : kRows) {
    std::string got;
    try {
      got = render(r.source, r.vars);
    } catch (const std::exception& e) {
      got = std::string("threw: ") + e.what();
    }
    EXPECT_EQ(got, r.want) << r.name << ": " << r.source;
  }
}

TEST(JinjaConstructs, SpecialVariablesAndBuiltins) {
  const ojson msgs = ojson::parse(R"([{"role": "user", "content": "hi"}])");
  EXPECT_EQ(forge::render_chat_template("{{ bos_token }}|{{ eos_token }}|{{ add_generation_prompt }}|{{ messages[0].content }}",
                                        msgs, true, "<s>", "</s>"),
            "<s>|</s>|True|hi");
  // transformers passes tools and documents as None; missing special tokens are undefined.
  EXPECT_EQ(forge::render_chat_template("{{ tools is none }}{{ documents is none }}{{ bos_token is defined }}", msgs, false),
            "TrueTrueFalse");
  // strftime_now formats the current time: a four-digit year.
  const std::string year = render("{{ strftime_now('%Y') }}");
  ASSERT_EQ(year.size(), 4u) << year;
  EXPECT_GE(std::stoi(year), 2024);
}

TEST(JinjaConstructs, ToJsonKeepsKeyOrderAndUnicode) {
  // json.dumps(v, ensure_ascii=False, indent=4): keys in document order, no \u escapes for text.
  const std::string vars = R"({"t": {"type": "function", "function": {"name": "f", "description": "été", "parameters": {}}}})";
  EXPECT_EQ(render("{{ t | tojson(indent=4) }}", vars),
            "{\n    \"type\": \"function\",\n    \"function\": {\n        \"name\": \"f\",\n"
            "        \"description\": \"été\",\n        \"parameters\": {}\n    }\n}");
  EXPECT_EQ(render("{{ t | tojson(sort_keys=true) }}", R"({"t": {"b": 1, "a": "\u0001"}})"),
            "{\"a\": \"\\u0001\", \"b\": 1}");
}

TEST(JinjaErrors, RaiseExceptionMessageIsExact) {
  EXPECT_EQ(error_of("{{ raise_exception('Roles must alternate') }}"), "Roles must alternate");
}

TEST(JinjaErrors, NameConstructAndLine) {
  EXPECT_EQ(error_of("line one\n{{ x | nosuchfilter }}"), "[chat-template] line 2: unknown filter 'nosuchfilter'");
  EXPECT_EQ(error_of("{% if x %}\n\n{{ x is nosuchtest }}{% endif %}", R"({"x": 1})"),
            "[chat-template] line 3: unknown test 'nosuchtest'");
  EXPECT_EQ(error_of("a\n{% for m in messages %}\n{{ m }}\n"),
            "[chat-template] line 2: unclosed '{% for %}': no '{% endfor %}' before the end of the template");
  EXPECT_EQ(error_of("{% if true %}x{% endfor %}"),
            "[chat-template] line 1: unexpected '{% endfor %}' (no open block it closes)");
  EXPECT_EQ(error_of("\n\n{% include 'other.j2' %}"), "[chat-template] line 3: unsupported tag '{% include %}'");
  EXPECT_EQ(error_of("{{ 'abc' "), "[chat-template] line 1: unclosed tag: no '}}' before the end of the template");
  EXPECT_EQ(error_of("{{ 'abc }}"), "[chat-template] line 1: unterminated string literal");
  EXPECT_EQ(error_of("{# note"), "[chat-template] line 1: unclosed comment '{#'");
  EXPECT_EQ(error_of("{{ 1 + }}"), "[chat-template] line 1: expected an expression, found '}}'");
  EXPECT_EQ(error_of("{% break %}"), "[chat-template] line 1: 'break' outside a for loop");
}

TEST(JinjaErrors, UndefinedMisuseAndTypeErrors) {
  // jinja2's default Undefined: printing is fine, arithmetic and attribute access are not.
  EXPECT_EQ(error_of("\n{{ 'a' + nothing }}"), "[chat-template] line 2: 'nothing' is undefined");
  EXPECT_EQ(error_of("{{ nothing.attr }}"), "[chat-template] line 1: 'nothing' is undefined");
  EXPECT_EQ(error_of("{{ 'a' + 1 }}"), "[chat-template] line 1: can only concatenate str (not \"int\") to str");
  EXPECT_EQ(error_of("{{ 1 // 0 }}"), "[chat-template] line 1: integer division or modulo by zero");
  EXPECT_EQ(error_of("{% set x = 1 %}{% set x.a = 2 %}"),
            "[chat-template] line 1: cannot assign attribute 'a' on 'x' (a int, not a namespace())");
  EXPECT_EQ(error_of("{{ 9223372036854775807 + 1 }}"), "[chat-template] line 1: integer overflow in +");
  // A slice is Python's own subscript in jinja2: None cannot be sliced.
  EXPECT_EQ(error_of("{{ x[1:] }}", R"({"x": null})"), "[chat-template] line 1: 'NoneType' object is not subscriptable");
}

TEST(JinjaErrors, LimitsStopRunawayTemplates) {
  // Unbounded work ends in an error naming the limit, never a hang or a crash.
  EXPECT_NE(error_of("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}").find("nested past 64 calls"),
            std::string::npos);
  EXPECT_NE(error_of("{% for a in range(100000) %}{% for b in range(100000) %}{% endfor %}{% endfor %}")
                .find("evaluation steps"),
            std::string::npos);
  EXPECT_NE(error_of("{{ 'x' * 100000000 }}").find("too large"), std::string::npos);
  EXPECT_NE(error_of("{{ " + std::string(500, '(') + "1" + std::string(500, ')') + " }}").find("nests deeper"),
            std::string::npos);
  // A namespace that holds itself prints without recursing forever.
  EXPECT_NE(error_of("{% set ns = namespace() %}{% set ns.me = ns %}{{ ns }}").find("too deeply"), std::string::npos);
}
