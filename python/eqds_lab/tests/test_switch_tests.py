"""eqds_lab.switch_tests: the mode timeline read from modes.csv."""

from eqds_lab.switch_tests import mode_fractions, mode_intervals

MODES = """time_ps,switch,pipe,port,mode
100,0,0,7,pessimistic
100,0,1,7,pessimistic
400,0,0,7,half
400,0,0,8,pessimistic
400,0,0,7,pessimistic
900,0,0,7,half
1500,0,0,7,optimistic
"""


def test_intervals_cover_the_run_and_agree_with_fractions(tmp_path):
    (tmp_path / "modes.csv").write_text(MODES)
    spans = mode_intervals(tmp_path, port=7, end_ps=1200)
    # Optimistic before the first change; the change back at the same instant (400)
    # leaves no empty interval; the run's end cuts the last one.
    assert spans == [
        (0, 100, "optimistic"),
        (100, 900, "pessimistic"),
        (900, 1200, "half"),
    ]
    spent: dict[str, float] = {}
    for a, b, m in spans:
        spent[m] = spent.get(m, 0) + (b - a) / 1200
    assert spent == mode_fractions(tmp_path, port=7, start_ps=0, end_ps=1200)


def test_other_pipes_and_ports_are_ignored(tmp_path):
    (tmp_path / "modes.csv").write_text(MODES)
    assert mode_intervals(tmp_path, port=8, end_ps=1000, pipe=1) == [(0, 1000, "optimistic")]
    assert mode_intervals(tmp_path, port=7, end_ps=50) == [(0, 50, "optimistic")]
