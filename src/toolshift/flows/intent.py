"""Intent words: the words of the user's requests that name what the agent is asked to do, for conditioning
a lookup's probability of use on them.

The vocabulary is the catalog's own: the words of its write tools' names (`cancel_reservation` gives
`cancel`; `update_reservation_baggages` gives `update` and `baggages`) that no read tool's name also has
(`reservation`, `flight`), so a word names an action or its object, not the records every request reads.
A user's word matches a vocabulary word when it starts with that word's first five letters (all of them
when it is shorter): `booking` matches `book`, `cancellation` `cancel`, `baggage` `baggages`. An episode's
intent is the sorted set of vocabulary words its user messages have matched so far (`-` when none).

`IntentCalibrator` recalibrates a score per site × intent where the training log has enough weighed lookups
of that site with that intent, shrunk toward the site's own map, and per site (`SiteCalibrator`) elsewhere:
the habit of "after a user's record, open the reservations" is learned apart for requests to book and
requests to cancel, when the training tasks hold enough of each.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from toolshift.flows.calibration import (
    MIN_COUNTS,
    SITE_PRIOR,
    Isotonic,
    SiteCalibrator,
    fit_isotonic,
    fit_site_calibrator,
)
from toolshift.flows.timeline import Catalog

STEM = 5
"""A user's word matches a vocabulary word that starts the same for this many letters (or the whole word)."""
MIN_LETTERS = 3
NO_INTENT = "-"
_WORD = re.compile(r"[a-z]+")
_CAMEL = re.compile(r"(?<=[a-z])(?=[A-Z])")


def name_words(tool: str) -> list[str]:
    """The words of a tool's name: split at `_`, `.`, `-`, digits and camelCase humps, lowercased."""
    return [
        w for w in _WORD.findall(_CAMEL.sub("_", tool.rsplit(".", 1)[-1]).lower()) if len(w) >= MIN_LETTERS
    ]


def _stem(word: str) -> str:
    return word[:STEM]


def intent_vocabulary(catalog: Catalog) -> tuple[str, ...]:
    """The catalog's intent words: its write tools' name words that no read tool's name shares (by stem)."""
    read_stems = {
        _stem(w) for tool, effect in catalog.effects.items() if effect == "read" for w in name_words(tool)
    }
    words = {
        w
        for tool, effect in catalog.effects.items()
        if effect == "write"
        for w in name_words(tool)
        if _stem(w) not in read_stems
    }
    return tuple(sorted(words))


@dataclass(frozen=True, slots=True)
class IntentMatcher:
    """Matches user messages against a vocabulary (compiled once per decider)."""

    vocabulary: tuple[str, ...]

    def matches(self, text: str) -> frozenset[str]:
        """The vocabulary words some word of `text` starts like."""
        if not self.vocabulary or not text:
            return frozenset()
        said = {w for w in _WORD.findall(text.lower()) if len(w) >= MIN_LETTERS}
        return frozenset(v for v in self.vocabulary if any(w.startswith(_stem(v)) for w in said))


def intent_key(words: Iterable[str]) -> str:
    """The intent of a set of matched words: sorted and joined with `+`, or `-` for none."""
    return "+".join(sorted(words)) or NO_INTENT


def episode_intent_key(texts: Sequence[str], vocabulary: tuple[str, ...]) -> str:
    """The intent of user messages `texts` (all of them), as a session reaches after reading them."""
    matcher = IntentMatcher(vocabulary)
    found: set[str] = set()
    for text in texts:
        found |= matcher.matches(text)
    return intent_key(found)


@dataclass(frozen=True)
class IntentCalibrator:
    """A site × intent map where training had `min_count` weighed lookups of that site and intent, else the
    site's (or the global) map of `base`. An empty intent (no user words seen: a gateway that sees only tool
    calls) always takes `base`."""

    base: SiteCalibrator
    by_intent: dict[str, Isotonic]
    """Keyed `site#intent`."""

    @property
    def min_count(self) -> int:
        return self.base.min_count

    def __call__(self, site: str, score: float, intent: str = "") -> float:
        m = self.by_intent.get(f"{site}#{intent}") if intent else None
        return m(score) if m is not None else self.base(site, score)


def fit_intent_calibrator(
    rows: Sequence[tuple[str, str, float, bool]], min_count: int, *, intent_min_count: int | None = None
) -> IntentCalibrator:
    """Rows are (site, intent, score, used); the base is `fit_site_calibrator` on the same rows with
    `min_count`; a site × intent needs `intent_min_count` rows (default `min_count`) for its own map."""
    need = min_count if intent_min_count is None else intent_min_count
    base = fit_site_calibrator([(s, x, u) for s, _, x, u in rows], min_count)
    grouped: dict[tuple[str, str], list[tuple[float, float]]] = {}
    for site, intent, score, used in rows:
        grouped.setdefault((site, intent), []).append((score, float(used)))
    maps = {}
    for (site, intent), v in grouped.items():
        if len(v) < need or not intent:
            continue
        prior = base.sites.get(site) or base.global_map
        maps[f"{site}#{intent}"] = fit_isotonic(
            [a for a, _ in v], [b for _, b in v], prior=prior, weight=SITE_PRIOR
        )
    return IntentCalibrator(base, maps)


def choose_intent_min_count(rows: Sequence[tuple[str, str, str, float, bool]], base_min_count: int, folds: int = 5,
                            candidates: Sequence[int] = MIN_COUNTS) -> tuple[int, dict[int, float]]:  # fmt: skip
    """Rows are (task, site, intent, score, used): the fewest rows a site × intent needs for its own map, the
    one with the lowest Brier score on held-out tasks (`folds`-fold by task, as `choose_min_count`; ties: the
    larger count, and 1,000,000 — no intent maps — among the candidates). The site maps keep `base_min_count`."""
    tasks = sorted({r[0] for r in rows})
    fold_of = {t: i % folds for i, t in enumerate(tasks)}
    brier: dict[int, float] = {}
    for m in candidates:
        err, n = 0.0, 0
        for f in range(folds):
            fit = [(s, k, x, u) for t, s, k, x, u in rows if fold_of[t] != f]
            held = [(s, k, x, u) for t, s, k, x, u in rows if fold_of[t] == f]
            if not fit or not held:
                continue
            cal = fit_intent_calibrator(fit, base_min_count, intent_min_count=m)
            err += sum((cal(s, x, k) - float(u)) ** 2 for s, k, x, u in held)
            n += len(held)
        brier[m] = err / n if n else float("inf")
    best = min(candidates, key=lambda m: (round(brier[m], 12), -m))
    return best, brier
