"""One spelling per concept across every `cosmos` command (cosmos_common.vocabulary)."""

from __future__ import annotations

import argparse

import pytest

from cosmos.cli import build_parser, main
from cosmos_common.vocabulary import HOMONYMS, SPELLINGS, Renamed


def _commands(parser, path=()):
    """(command words, parser) of every subcommand, depth first."""
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _commands(sub, (*path, name))


def _options():
    """(command, option string, action) of every option of every subcommand."""
    for path, parser in _commands(build_parser()):
        for action in parser._actions:
            for opt in action.option_strings:
                yield " ".join(path), opt, action


OTHER = {other: concept for concept, (_, others) in SPELLINGS.items() for other in others}


def test_no_second_spelling_of_a_known_concept():
    """An option spelled as another tool (or an earlier release) spells a concept of
    SPELLINGS is only an earlier spelling kept for a release: hidden, and it says the new
    spelling (a Renamed action)."""
    wrong = [f"cosmos {cmd} {opt}: a second spelling of {SPELLINGS[OTHER[opt]][0]}"
             for cmd, opt, action in _options()
             if opt in OTHER and not isinstance(action, Renamed)]
    assert not wrong, "\n".join(wrong)


def test_renamed_options_are_hidden_and_point_at_the_spelling():
    seen = 0
    for cmd, opt, action in _options():
        if isinstance(action, Renamed):
            seen += 1
            assert action.help == argparse.SUPPRESS, (cmd, opt)
            assert action.new in {s for s, _ in SPELLINGS.values()}, (cmd, opt, action.new)
    assert seen >= 4     # --threads, --system, --workload, --scheduler (Dask) at least


def test_homonyms_mean_one_thing():
    """``--scheduler`` is the DRAM controller's request scheduler only; elsewhere it is at
    most the earlier spelling of ``--dask-scheduler``."""
    for cmd, opt, action in _options():
        if opt in HOMONYMS and cmd not in HOMONYMS[opt]:
            assert isinstance(action, Renamed), f"cosmos {cmd} {opt}"


@pytest.mark.parametrize("concept", ["workers", "progress", "seed", "cache"])
def test_commands_that_share_a_concept_spell_it_once(concept):
    """Every command that has the concept has exactly its spelling (not two)."""
    spelling, others = SPELLINGS[concept]
    for path, parser in _commands(build_parser()):
        opts = {o for a in parser._actions if not isinstance(a, Renamed)
                for o in a.option_strings}
        assert len(opts & {spelling, *others}) <= 1, (path, opts & {spelling, *others})


def test_the_earlier_spelling_still_works_and_says_so(capsys):
    parser = build_parser("graphs")
    args = parser.parse_args(["graphs", "build", "--threads", "3"])
    assert args.threads == 3
    assert "--threads is now --workers" in capsys.readouterr().err
    args = build_parser("simulate").parse_args(["simulate", "--system", "cosmos",
                                                "--workload", "sift"])
    assert (args.system, args.workload) == ("cosmos", "sift")
    err = capsys.readouterr().err
    assert "--system is now --systems" in err and "--workload is now --dataset" in err


def test_simulate_refuses_several_systems(capsys):
    assert main(["simulate", "--systems", "base,cosmos", "--dataset", "sift"]) == 2
    assert "cosmos replay TRACE --systems base,cosmos" in capsys.readouterr().err
