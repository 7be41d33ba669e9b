"""Evidence counts only what evolved: unchanged seeds are reported apart, lineages before/after by source."""

from __future__ import annotations

from toolshift.evolve.archive import Mutation, ProgramRecord
from toolshift.evolve.evidence import evolved_only, lineage_lines, lineages, source_of


def _r(pid: str, root: str, c: float, domain: str = "payroll") -> ProgramRecord:
    kind = "seed" if pid == root else "structural"
    return ProgramRecord(id=pid, root=root, domain=domain, mutation=Mutation(proposer=kind, kind=kind),
                         status="evaluated", completion=c, parent=None if pid == root else root)  # fmt: skip


def test_unchanged_seeds_are_apart_and_lineages_say_where_each_seed_went():
    seeds = [_r("a", "a", 1.0), _r("b", "b", 0.0, "tau2-airline"), _r("c", "c", 0.5, "bfcl")]
    final = [_r("a.s1", "a", 0.6), _r("a.s2", "a", 0.4), _r("b.s3", "b", 0.3, "tau2-airline"), seeds[2]]
    evolved, kept = evolved_only(final)
    assert [r.id for r in evolved] == ["a.s1", "a.s2", "b.s3"] and [r.id for r in kept] == ["c"]
    ls = {x.root.id: x for x in lineages(seeds, final)}
    assert ls["a"].after == 0.5 and ls["b"].after == 0.3 and ls["c"].after is None and ls["c"].seed_kept
    text = "\n".join(lineage_lines(seeds, final))
    assert "2 of 3 seeds start outside 30–70%" in text
    assert (
        "2 lineages have evolved final tasks; 2 of them moved from outside the band to a mean inside it"
        in text
    )
    assert "| τ²-bench airline | 1 | 1 | 1 | 0.00 → 0.30 |" in text
    assert "excluded from every final-task figure on this page: 1 — `c` (c = 0.50)" in text
    assert source_of(seeds[2]) == "BFCL multi-turn" and source_of(seeds[0]) == "toolshift bench"


def test_seeds_of_the_hand_written_worlds_are_not_labelled_as_the_synthesised_benchmark():
    """The demo's clinic, library and freight-depot tasks were shown as "toolshift bench" in lineage tables."""
    assert source_of(_r("d", "d", 1.0, "clinic")) == "toolshift built-in worlds"
    assert source_of(_r("l", "l", 1.0, "library")) == "toolshift built-in worlds"
    assert source_of(_r("p", "p", 1.0, "payroll")) == "toolshift bench"
