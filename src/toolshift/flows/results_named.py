"""The results page's named-walk table (flow format 7): per walk and site, the counts where the user named values."""

from __future__ import annotations

from toolshift.flows.model import Flow
from toolshift.flows.results_crossval import table


def named_walks_text(flow: Flow) -> list[str]:
    """The page lines for a flow's named walks (none for a flow without them)."""
    rows = []
    for name, tool in flow.tools.items():
        walk = tool.walk
        if walk is None or not walk.named:
            continue
        for site, counts in walk.named.items():
            cells = []
            for state, c in enumerate(counts):
                chance = walk.named_chance(site, state, "reach")
                cells.append(f"{c.reach}/{c.n} ({chance or 0:.2f}) · {c.next}/{c.n}" if c.n else "—")
            rows.append([name, f"`{site}`", *cells])
    if not rows:
        return []
    return ["### The learned named walks\n",
            "Where the user's messages had named values of the listing (`toolshift.flows.named`), per site: the "
            "decisions with a named value not yet passed (the walk passes it first) and with every named value "
            "passed; reach count / decisions (the reach chance, with the walk's prior) · next-step count / "
            "decisions. The learned walks above count every decision; where the user named none of a listing's "
            "values, the walk scores by its counts over those decisions alone (`Walk.unnamed`).\n",
            table(("Read", "Site", "A named value not yet passed", "Every named value passed"), rows), ""]  # fmt: skip
