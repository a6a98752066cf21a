"""The worker's command line (src/worker/args.h) from the Python side: the torch probe takes exactly the rank's flags
that tests/data/golden/worker_args.json lists (the C++ side writes it: WorkerArgs.TheGoldenFileIsWhatThisSideSays),
with the same types and defaults, reads the golden rank argv to the golden values, and reads --startup's spellings as
the C++ side does. A flag added on one side only fails here or there."""

import json
import os

import pytest

from coldstart.torch_worker import WORKER_FLAGS, dest, parse_args, parse_startup

HERE = os.path.dirname(os.path.abspath(__file__))
GOLDEN = os.path.join(HERE, "..", "..", "tests", "data", "golden", "worker_args.json")


def golden() -> dict:
    with open(GOLDEN) as f:
        return json.load(f)


def rank_flags() -> dict:
    return {f["name"]: f for f in golden()["flags"] if not f["launcher_only"]}


def test_the_probe_takes_exactly_the_rank_flags_in_order():
    assert [flag for flag, _, _ in WORKER_FLAGS] == list(rank_flags())


@pytest.mark.parametrize("flag,kind,default", WORKER_FLAGS)
def test_each_flag_has_the_type_and_default_of_the_cpp_side(flag, kind, default):
    want = rank_flags()[flag]
    assert kind.__name__ == want["type"]
    assert default == want["default"] and type(default) is type(want["default"])


def test_the_probe_reads_the_golden_rank_argv_to_its_values():
    example = golden()["rank_example"]
    args = vars(parse_args(example["argv"]))
    flags = rank_flags()
    assert {dest(flag) for flag in flags} == set(args)
    for flag, value in example["values"].items():
        if flag in flags:
            assert args[dest(flag)] == value, flag


def test_startup_spellings_read_as_the_cpp_side_reads_them():
    for s in golden()["startup"]:
        kind, amount, piece = parse_startup(s["text"])
        assert (kind, piece) == (s["kind"], s["piece"]), s["text"]
        assert amount == pytest.approx(s["amount"]), s["text"]
