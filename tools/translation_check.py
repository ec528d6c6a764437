#!/usr/bin/env python3
"""Keeps the Chinese edition in step with the English one, section by section.

    tools/translation_check.py check [FILE ...]   every pair (or the named files, either edition)
    tools/translation_check.py stamp FILE.zh.md   record that FILE.zh.md matches its English now
    tools/translation_check.py stamp lessons/NN_slug/given/hints.json   the same for the
                                                  Chinese TODO contracts
    tools/translation_check.py --self-test

Every README.md of the course (the top level, docs/results and every lesson) and every
solutions/NN_slug/NOTES.md has a Chinese edition beside it, README.zh.md or NOTES.zh.md. The
two are split at their headings into sections, and section i of one must match section i of
the other:
  - the same heading level, and a Doxygen anchor {#name} in English is {#name_zh} in Chinese;
  - the same fenced code blocks, byte for byte, and the same generated blocks (the results
    tool's output, figures and results excerpts, which it writes into both editions);
  - every inline code span, every number written with digits and every TODO number of the
    English section also in the Chinese one;
  - every link of the English section also in the Chinese one (a README.md or NOTES.md target
    as its .zh.md), and every relative link of the Chinese file pointing at a file that exists.
Line 1 of each edition links to the other. What the rules above cannot see, a sentence that
changed without a number or a code span changing, the stamp sees: docs/translation_stamps.json
holds a fingerprint of every English section as it was when its Chinese section was last
brought in step (`stamp`), and `check` names each section whose English has changed since.

The Chinese TODO contracts (`contract_zh` in lessons/NN_slug/given/hints.json, which
`./course reset --lang zh` writes into the starter) are stamped the same way: one fingerprint
per TODO comment of the English solution, and `check` names each TODO whose English has
changed since its Chinese was last brought in step.
"""
import hashlib
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
from course_cli.exercise import HINTS_FILE, todo_blocks  # noqa: E402
STAMPS = ROOT / "docs" / "translation_stamps.json"
EN_FIRST = "**English** · [中文]({zh})"
ZH_FIRST = "[English]({en}) · **中文**"
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*$")
ANCHOR = re.compile(r"\{#([A-Za-z0-9_-]+)\}\s*$")
FENCE = re.compile(r"^\s*(```|~~~)")
GENERATED = [("<!-- output:begin -->", "<!-- output:end -->"),
             ("<!-- figures:begin -->", "<!-- figures:end -->"),
             ("<!-- results:begin -->", "<!-- results:end -->")]
# A code span may wrap onto the next line (not past a blank line); compared with its white
# space collapsed, so a span the English wraps matches one the Chinese keeps on one line.
INLINE_CODE = re.compile(r"`((?:[^`\n]|\n(?![ \t]*\n))+?)`")
LINK = re.compile(r"!?\[(?:[^\]\[]|\[[^\]]*\])*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
NUMBER = re.compile(r"\d+(?:\.\d+)?")
TODO = re.compile(r"TODO \d+")


def english_files():
    """Every English file that has a Chinese edition."""
    files = [ROOT / "README.md", ROOT / "docs" / "results" / "README.md"]
    files += sorted((ROOT / "lessons").glob("[0-9][0-9]_*/README.md"))
    files += sorted((ROOT / "solutions").glob("[0-9][0-9]_*/NOTES.md"))
    files += sorted(p for p in (ROOT / "docs" / "pages").glob("*.md")
                    if not p.name.endswith(".zh.md") and chinese_of(p).exists())
    return files


def chinese_of(english):
    return english.with_name(english.name[:-3] + ".zh.md")


def english_of(chinese):
    return chinese.with_name(chinese.name[:-6] + ".md")


class Section:
    """One heading and what follows it up to the next heading (section 0: before the first)."""

    def __init__(self, heading, level):
        self.heading = heading
        self.level = level
        self.lines = []
        self.code = []       # fenced code blocks, each its lines joined
        self.generated = []  # generated blocks, each its lines joined
        self.prose = []      # every other line

    def anchor(self):
        m = ANCHOR.search(self.heading)
        return m.group(1) if m else None

    def name(self):
        return self.heading if self.heading else "(before the first heading)"

    def fingerprint(self):
        text = "\n".join(line.rstrip() for line in [self.heading] + self.lines).strip()
        return hashlib.sha256(text.encode()).hexdigest()[:16]


def split(text):
    """The sections of a Markdown text, line 1 (the edition link) left out."""
    lines = text.split("\n")[1:]
    sections = [Section("", 0)]
    block, closing = None, None
    for line in lines:
        section = sections[-1]
        if block is not None:
            block.append(line)
            done = FENCE.match(line) if closing == "fence" else line.strip() == closing
            if done:
                (section.code if closing == "fence" else section.generated).append("\n".join(block))
                block = None
            section.lines.append(line)
            continue
        if FENCE.match(line):
            block, closing = [line], "fence"
            section.lines.append(line)
            continue
        begin = [end for start, end in GENERATED if line.strip() == start]
        if begin:
            block, closing = [line], begin[0]
            section.lines.append(line)
            continue
        m = HEADING.match(line)
        if m:
            sections.append(Section(line.rstrip(), len(m.group(1))))
            continue
        section.lines.append(line)
        section.prose.append(line)
    if block is not None:
        sections[-1].code.append("\n".join(block))  # unclosed: compared as it is
    return sections


def prose_facts(section):
    """Inline code spans, link targets, numbers and TODOs of a section's prose."""
    text = "\n".join([section.heading] + section.prose)
    text = ANCHOR.sub("", text)
    code = [" ".join(span.split()) for span in INLINE_CODE.findall(text)]
    text = INLINE_CODE.sub(" ", text)
    links = LINK.findall(text)
    text = LINK.sub(lambda m: m.group(0).split("](")[0], text)  # keep link text, drop targets
    text = re.sub(r"https?://\S+", " ", text)
    return {"code": set(code), "links": set(links), "numbers": set(NUMBER.findall(text)),
            "todos": set(TODO.findall(text))}


def as_chinese_target(target):
    """A link target of the English file as the Chinese file writes it (fragment dropped)."""
    path = target.split("#")[0]
    for name in ("README.md", "NOTES.md"):
        if path == name or path.endswith("/" + name):
            return path[: -len(name)] + name[:-3] + ".zh.md"
    return path


def check_pair(english, stamps):
    """The problems of one pair, each a line naming the file and the section."""
    chinese = chinese_of(english)
    rel_en, rel_zh = english.relative_to(ROOT), chinese.relative_to(ROOT)
    if not chinese.exists():
        return [f"{rel_zh}: missing (the Chinese edition of {rel_en})"]
    problems = []
    en_text, zh_text = english.read_text(encoding="utf-8"), chinese.read_text(encoding="utf-8")
    en_first, zh_first = en_text.split("\n", 1)[0], zh_text.split("\n", 1)[0]
    if en_first != EN_FIRST.format(zh=chinese.name):
        problems.append(f"{rel_en}: line 1 must be `{EN_FIRST.format(zh=chinese.name)}`")
    if zh_first != ZH_FIRST.format(en=english.name):
        problems.append(f"{rel_zh}: line 1 must be `{ZH_FIRST.format(en=english.name)}`")
    en, zh = split(en_text), split(zh_text)
    if len(en) != len(zh):
        problems.append(f"{rel_zh}: {len(zh) - 1} headings, {rel_en} has {len(en) - 1}: "
                        f"the editions must have the same sections")
    for i, (e, z) in enumerate(zip(en, zh)):
        problems += section_problems(f"{rel_zh}, section {i} ({e.name()})", e, z)
    problems += broken_links(chinese, rel_zh, zh_text)
    problems += stamp_problems(stamps.get(str(rel_zh)), en, rel_en, rel_zh)
    return problems


def section_problems(where, e, z):
    """What the Chinese section `z` lacks of the English section `e`: the same heading level
    and anchor, code blocks, generated block, inline code, numbers, TODOs and links."""
    problems = []
    if e.level != z.level:
        problems.append(f"{where}: heading level {z.level}, the English has {e.level}")
    if e.anchor() is not None and z.anchor() != e.anchor() + "_zh":
        problems.append(f"{where}: the heading's anchor must be {{#{e.anchor()}_zh}}")
    if e.code != z.code:
        problems.append(f"{where}: its code blocks differ from the English section's "
                        f"(they must be identical, byte for byte)")
    if e.generated != z.generated:
        problems.append(f"{where}: its generated block differs from the English section's "
                        f"(tools/results_table.py writes both)")
    ef, zf = prose_facts(e), prose_facts(z)
    for kind, label in (("code", "inline code"), ("numbers", "number"), ("todos", "TODO")):
        for item in sorted(ef[kind] - zf[kind]):
            problems.append(f"{where}: the English {label} `{item}` is missing")
    for target in sorted(ef["links"]):
        if as_chinese_target(target) not in {t.split("#")[0] for t in zf["links"]}:
            problems.append(f"{where}: the English link to {target} is missing "
                            f"(as {as_chinese_target(target) or target})")
    return problems


def broken_links(chinese, rel_zh, zh_text):
    """The Chinese file's relative links that point at no file."""
    problems = []
    for target in LINK.findall(zh_text):
        path = target.split("#")[0]
        if not path or re.match(r"^[a-z]+:", path):
            continue
        if not (chinese.parent / path).exists():
            problems.append(f"{rel_zh}: the link to {target} points at nothing")
    return problems


def stamp_problems(stamp, en, rel_en, rel_zh):
    """The English sections changed since the Chinese file was stamped (`stamp`: the
    fingerprints of the English sections then, None when it never was)."""
    if stamp is None:
        return [f"{rel_zh}: not stamped (after checking it: "
                f"tools/translation_check.py stamp {rel_zh})"]
    problems = []
    for i, e in enumerate(en):
        if i >= len(stamp) or stamp[i] != e.fingerprint():
            problems.append(f"{rel_en}, section {i} ({e.name()}): changed since "
                            f"{rel_zh} was last brought in step: update that section of "
                            f"{rel_zh}, then run tools/translation_check.py stamp {rel_zh}")
    return problems


def load_stamps():
    return json.loads(STAMPS.read_text()) if STAMPS.exists() else {}


def contract_files():
    """Every lesson's hints.json (the Chinese TODO contracts), with its solution file."""
    pairs = []
    for hints in sorted((ROOT / "lessons").glob(f"[0-9][0-9]_*/{HINTS_FILE.as_posix()}")):
        lesson = hints.parent.parent.name
        pairs.append((hints, ROOT / "solutions" / lesson / f"{lesson[3:]}.cu"))
    return pairs


def contract_fingerprints(solution):
    """One fingerprint per TODO comment of the English solution, in file order."""
    blocks = todo_blocks(solution.read_text(encoding="utf-8"))
    return [hashlib.sha256(f"TODO {b.number}{b.tag}: {' '.join(b.text)}".encode()).hexdigest()[:16]
            for b in blocks], blocks


def check_contracts(hints, solution, stamps):
    """The TODOs whose English comment changed since hints.json's Chinese was stamped."""
    key = str(hints.relative_to(ROOT))
    prints, blocks = contract_fingerprints(solution)
    old = stamps.get(key)
    if old is None:
        return [f"{key}: never stamped: bring its contract_zh in step with "
                f"{solution.relative_to(ROOT)}, then run tools/translation_check.py stamp {key}"]
    return [f"{solution.relative_to(ROOT)}, TODO {b.number} (occurrence {i + 1}): changed since "
            f"{key}'s contract_zh was last brought in step: update it, then run "
            f"tools/translation_check.py stamp {key}"
            for i, (b, p) in enumerate(zip(blocks, prints)) if i >= len(old) or old[i] != p]


def pairs_of(names):
    if not names:
        return english_files()
    result = []
    for name in names:
        path = (Path.cwd() / name).resolve()
        result.append(english_of(path) if path.name.endswith(".zh.md") else path)
    return result


def check(names):
    stamps = load_stamps()
    problems = []
    contracts = [c for c in contract_files()
                 if not names or any(Path(n).resolve() == c[0] for n in names)]
    md_names = [n for n in names if not n.endswith(".json")]
    pairs = pairs_of(md_names) if md_names or not names else []
    for english in pairs:
        problems += check_pair(english, stamps)
    for hints, solution in contracts:
        problems += check_contracts(hints, solution, stamps)
    for line in problems:
        print(line)
    print(f"translation_check: {len(pairs) + len(contracts)} file(s) checked, "
          f"{len(problems)} problem(s)")
    return 1 if problems else 0


def stamp(names):
    stamps = load_stamps()
    for hints, solution in contract_files():
        if any(Path(n).resolve() == hints for n in names):
            key = str(hints.relative_to(ROOT))
            stamps[key] = contract_fingerprints(solution)[0]
            print(f"stamped {key}: {len(stamps[key])} TODO comments")
    names = [n for n in names if not n.endswith(".json")]
    for english in pairs_of(names) if names else []:
        chinese = chinese_of(english)
        left = [p for p in check_pair(english, {str(chinese.relative_to(ROOT)): []})
                if "changed since" not in p]
        if left:
            print("\n".join(left))
            print(f"not stamped: {chinese.relative_to(ROOT)} has the problems above")
            return 1
        sections = split(english.read_text(encoding="utf-8"))
        stamps[str(chinese.relative_to(ROOT))] = [s.fingerprint() for s in sections]
        print(f"stamped {chinese.relative_to(ROOT)}: {len(sections)} sections")
    STAMPS.write_text(json.dumps(dict(sorted(stamps.items())), indent=1) + "\n")
    return 0


def self_test():
    """The check fails on each kind of drift, shown on a small pair in a temporary folder."""
    import tempfile
    global ROOT, STAMPS
    saved = ROOT, STAMPS
    english = ("**English** · [中文](README.zh.md)\n# Lesson 01: copies {#lesson01}\n\nText with "
               "`cp.async` and 16 bytes, TODO 2, see [03](../03/README.md).\n\n## Run\n\n"
               "```bash\n./course check 01\n```\n\nIt takes 90 s (`a wrapped\n  span`).\n")
    chinese = ("[English](README.md) · **中文**\n# 第 01 课：拷贝 {#lesson01_zh}\n\n含 `cp.async` "
               "与 16 字节，TODO 2，见 [03](../03/README.zh.md)。\n\n## 运行\n\n```bash\n./course "
               "check 01\n```\n\n需要 90 秒（`a wrapped span`）。\n")
    drifts = {
        "a code block changed": ("./course check 01", "./course check 1"),
        "a number lost": ("需要 90 秒", "需要九十秒"),
        "an inline code span lost": ("`cp.async`", "cp.async"),
        "a TODO lost": ("TODO 2", "待办 2"),
        "a heading level changed": ("## 运行", "### 运行"),
        "an anchor not renamed": ("{#lesson01_zh}", "{#lesson01}"),
        "a link kept in English": ("../03/README.zh.md", "../03/README.md"),
        "a section dropped": ("## 运行\n\n", ""),
    }
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        ROOT, STAMPS = Path(tmp), Path(tmp) / "stamps.json"
        (ROOT / "03").mkdir()
        (ROOT / "03" / "README.zh.md").write_text("x")
        (ROOT / "01").mkdir()
        en, zh = ROOT / "01" / "README.md", ROOT / "01" / "README.zh.md"
        en.write_text(english)
        zh.write_text(chinese)
        if stamp([str(zh)]) != 0 or check_pair(en, load_stamps()):
            print("self-test FAILED: the matching pair did not pass", check_pair(en, load_stamps()))
            return 1
        for what, (old, new) in drifts.items():
            assert old in chinese, what
            zh.write_text(chinese.replace(old, new, 1))
            if not check_pair(en, load_stamps()):
                print(f"self-test FAILED: {what} was not caught")
                failures += 1
        zh.write_text(chinese)
        en.write_text(english.replace("It takes 90 s", "It takes 90 s on an H100"))
        stale = check_pair(en, load_stamps())
        if not any("section 2 (## Run): changed since" in p for p in stale):
            print(f"self-test FAILED: a changed English sentence was not named: {stale}")
            failures += 1
        # A Chinese TODO contract stamped, then its English TODO changed.
        hints = ROOT / "lessons" / "01_x" / HINTS_FILE
        solution = ROOT / "solutions" / "01_x" / "x.cu"
        hints.parent.mkdir(parents=True)
        solution.parent.mkdir(parents=True)
        hints.write_text("{}")
        solution.write_text("  // TODO 1: afterwards a holds b.\n  //         All of it.\n")
        stamp([str(hints)])
        fresh = check_contracts(hints, solution, load_stamps())
        solution.write_text("  // TODO 1: afterwards a holds b.\n  //         Half of it.\n")
        changed = check_contracts(hints, solution, load_stamps())
        if fresh or not any("TODO 1 (occurrence 1): changed since" in p for p in changed):
            print(f"self-test FAILED: a changed TODO contract: {fresh} / {changed}")
            failures += 1
    ROOT, STAMPS = saved
    if failures:
        return 1
    print(f"self-test passed: {len(drifts) + 2} kinds of drift caught")
    return 0


def main(argv):
    if argv == ["--self-test"]:
        return self_test()
    if argv and argv[0] == "check":
        return check(argv[1:])
    if len(argv) >= 2 and argv[0] == "stamp":
        return stamp(argv[1:])
    print(__doc__.split("\n\n")[1], file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
