"""The manual stays a manual: README.md and docs/ say what the code does now, and their links work.

Checked here:

- README.md has at most 300 lines, and its first code block is exactly the two commands of the
  project's contract (install + main job; install + tests), which .ci/run also runs.
- No journal in README.md or any docs/*.md: no dates, no commit hashes, no numbered work
  periods ("session 12"), no "tried and dropped" narratives (docs/performance.md included: it
  names the CPU once, and the commands that make its figures).
- Every relative link (``[text](path)``, images included) resolves to a file in the repository,
  and a ``#anchor`` into a markdown page names one of its headings.
- No source file cites a "DESIGN.md" (the design notes are docs/design.md).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
MAX_README_LINES = 300

MONTHS = ("January|February|March|April|May|June|July|August|September|October|November|December|"
          "Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec")
JOURNAL = [
    ("a date", re.compile(r"\b\d{4}-\d{1,2}-\d{1,2}\b")),
    ("a date", re.compile(rf"\b(?:{MONTHS})\.? (?:\d{{1,2}}(?:st|nd|rd|th)?,? )?\d{{4}}\b")),
    ("a date", re.compile(rf"\b\d{{1,2}}(?:st|nd|rd|th)? (?:{MONTHS})\b")),
    ("a date", re.compile(rf"\b(?:{MONTHS}) \d{{1,2}}(?:st|nd|rd|th)?\b")),
    # 7-40 hex digits as one word, with at least one letter a-f and one digit
    ("a commit hash", re.compile(r"\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])[0-9a-f]{7,40}\b")),
    ("a numbered work period", re.compile(r"\bsessions? \d+", re.IGNORECASE)),
    ("a tried-and-dropped narrative", re.compile(r"\btried and (?:dropped|abandoned)\b", re.IGNORECASE)),
]


def doc_files() -> list[Path]:
    return [README] + sorted((ROOT / "docs").rglob("*.md"))


def journal_offenses(path: Path, text: str) -> list[str]:
    """Every line of ``text`` that carries a date, a hash, a session number or a tried-and-dropped."""
    out = []
    for no, line in enumerate(text.splitlines(), 1):
        for what, rx in JOURNAL:
            m = rx.search(line)
            if m:
                out.append(f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}:{no}: "
                           f"{what} ({m.group(0)!r}): {line.strip()}")
                break
    return out


def strip_fenced(text: str) -> str:
    """The markdown without fenced code blocks (their lines kept, empty)."""
    return re.sub(r"^```.*?^```", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S | re.M)


def strip_code(text: str) -> str:
    """The markdown without fenced code blocks and inline code (their brackets are not links)."""
    return re.sub(r"`[^`\n]*`", "``", strip_fenced(text))


LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    h = heading.strip().lower()
    h = re.sub(r"`([^`]*)`", lambda m: m.group(1).replace("*", "\0"), h)  # code: kept as is
    h = re.sub(r"(?<!\w)_+|_+(?!\w)", "", h)   # _emphasis_ markers, not snake_case's _
    h = h.replace("*", "").replace("\0", "*")
    h = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", h)
    h = re.sub(r"[^\w\- ]", "", h)
    return h.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    seen: dict[str, int] = {}
    out = set()
    for line in strip_fenced(path.read_text()).splitlines():
        m = re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
        if m:
            s = slug(m.group(1))
            n = seen.get(s, 0)
            seen[s] = n + 1
            out.add(s if n == 0 else f"{s}-{n}")
    return out


def link_offenses(path: Path, text: str) -> list[str]:
    out = []
    body = strip_code(text)
    for no, line in enumerate(body.splitlines(), 1):
        for m in LINK.finditer(line):
            target = m.group(1)
            if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I):   # http:, https:, mailto:
                continue
            file_part, _, anchor = target.partition("#")
            dest = (path.parent / file_part).resolve() if file_part else path
            where = f"{path.relative_to(ROOT)}:{no}: link {target!r}"
            if not dest.exists():
                out.append(f"{where}: no such file {dest}")
            elif not dest.is_relative_to(ROOT):
                out.append(f"{where}: points outside the repository")
            elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
                out.append(f"{where}: no heading with anchor #{anchor} in {dest.relative_to(ROOT)}")
    return out


def test_readme_is_at_most_300_lines():
    n = len(README.read_text().splitlines())
    assert n <= MAX_README_LINES, f"README.md has {n} lines; at most {MAX_README_LINES}"


def test_no_dates_hashes_sessions_or_tried_and_dropped():
    bad = [o for p in doc_files() for o in journal_offenses(p, p.read_text())]
    assert not bad, "journal entries in the manual:\n" + "\n".join(bad)


def test_every_relative_link_resolves():
    bad = [o for p in doc_files() for o in link_offenses(p, p.read_text())]
    assert not bad, "broken links:\n" + "\n".join(bad)


def test_readme_starts_with_the_two_commands():
    blocks = re.findall(r"^```[^\n]*\n(.*?)^```", README.read_text(), flags=re.S | re.M)
    assert blocks, "README.md has no code block"
    cmds = [re.sub(r"\s+#.*$", "", line).strip() for line in blocks[0].splitlines()]
    cmds = [c for c in cmds if c]
    assert cmds == ["pip install -e . && cosmos reproduce",
                    'pip install -e ".[test]" && python -m pytest -q'], cmds
    ci = (ROOT / ".ci" / "run").read_text()
    assert 'pip install -q -e ".[test]"' in ci and "python -m pytest -q" in ci


def test_no_source_cites_a_missing_design_md():
    bad = []
    for p in ROOT.rglob("*.py"):
        rel = p.relative_to(ROOT)
        if rel.parts[0].startswith(".") or "site-packages" in rel.parts:
            continue
        for no, line in enumerate(p.read_text(errors="replace").splitlines(), 1):
            if "DESIGN.md" in line:
                bad.append(f"{rel}:{no}: {line.strip()}")
    bad = [b for b in bad if not b.startswith("tests/test_docs.py")]
    assert not bad, "cite docs/design.md or the source itself:\n" + "\n".join(bad)


# --- the checks can fail ---------------------------------------------------------------------

@pytest.mark.parametrize("line, what", [
    ("measured 2026-11-23 on two cores", "a date"),
    ("the run of 23 November took 5 min", "a date"),
    ("as of Nov 2026", "a date"),
    ("at commit e792a1e the figures were", "a commit hash"),
    ("in session 19 we found", "a numbered work period"),
    ("Sessions 3-5 tried it", "a numbered work period"),
    ("Tried and dropped: a timing wheel", "a tried-and-dropped narrative"),
])
def test_the_journal_check_catches(line, what, tmp_path):
    bad = journal_offenses(tmp_path / "x.md", f"# Title\n\n{line}\n")
    assert len(bad) == 1 and what in bad[0] and ":3:" in bad[0]


@pytest.mark.parametrize("line", [
    "addresses like 0x1f40 and 0xdeadbeef2 are not hashes",
    "1,000,000 clusters in 6.8 s; nREFI 9375; 64-bit keys",
    "the decade-old default (May be changed) and 12 ranks",
    "cosmos run fig4a_qps --full; sha256 digests checked",
])
def test_the_journal_check_passes(line, tmp_path):
    assert journal_offenses(tmp_path / "x.md", f"# T\n\n{line}\n") == []


def test_the_performance_page_is_checked_from_its_first_line(tmp_path):
    d = tmp_path / "docs"
    d.mkdir()
    text = ("# Performance\n\nMeasured at revision 1a2b3c4d on 2026-11-25.\n\n| a | b |\n|---|---|\n"
            "| x | 2026-11-25 |\n")
    bad = journal_offenses(d / "performance.md", text)
    assert len(bad) == 2 and ":3:" in bad[0] and ":7:" in bad[1]


def test_the_link_check_catches_a_missing_file_and_anchor(tmp_path):
    page = ROOT / "docs" / "_probe_does_not_exist.md"
    text = ("[ok](design.md) [gone](nothing_here.md) [web](https://example.org/x.md)\n"
            "[bad anchor](design.md#no-such-heading-anywhere) `[code](not_a_link.md)`\n")
    bad = link_offenses(page, text)
    assert len(bad) == 2, bad
    assert "nothing_here.md" in bad[0] and "no-such-heading-anywhere" in bad[1]


def test_slug_follows_github():
    assert slug("Adding a system") == "adding-a-system"
    assert slug("Fidelity (against Ramulator 2.1)") == "fidelity-against-ramulator-21"
    assert slug("`dram/`: a DDR5 model") == "dram-a-ddr5-model"


def documented_commands() -> list[tuple[str, str]]:
    """``(file, command)`` for every ``cosmos ...`` line in a code block of the README and
    docs/, with its comment, what follows a shell operator and ``[optional]`` parts removed."""
    import shlex

    out = []
    for f in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        for block in re.findall(r"```[a-z]*\n(.*?)```", f.read_text(), re.S):
            lines, held = [], ""
            for line in block.replace("\\\n", " ").splitlines():  # a synopsis's [...] may
                held = f"{held} {line.strip()}".strip()            # span lines
                if held.count("[") <= held.count("]"):
                    lines.append(held)
                    held = ""
            for line in lines:
                if not line.startswith("cosmos "):
                    continue
                cmd = re.split(r"\s+#", line)[0]
                while re.search(r"\[[^\[\]]*\]", cmd):           # optional parts, nested
                    cmd = re.sub(r"\[[^\[\]]*\]", " ", cmd)
                cmd = re.split(r"\s*(?:&&|\|\||\||;)\s*", cmd)[0]
                out.append((f.name, " ".join(shlex.split(cmd))))
    return out


def test_every_documented_command_parses():
    """Each ``cosmos`` command in the README and docs/ is accepted by the command line as
    written (its subcommand, options and their values), so the manual runs as printed."""
    from cosmos.cli import build_parser

    cmds = documented_commands()
    assert len(cmds) > 30
    for name, cmd in cmds:
        words = cmd.split()[1:]
        try:
            build_parser(words[0] if words else None).parse_args(words)
        except SystemExit as exc:
            assert not exc.code, f"{name}: `{cmd}` is refused by the command line"
