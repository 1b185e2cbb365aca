"""Which memories lend to which (neighbour_pairs) and the passage around an episode
(passage_similarity), computed set-based with numpy: checked on small scopes by hand and
against a plain loop over every pair on random scopes."""
import random

import numpy as np

from memoryapp.retrieval import NEIGHBOUR_WINDOW, PASSAGE_SCALE, Signals, neighbour_pairs, passage_similarity


def scope(rows, *, roles=True):
    """rows: (session, seq, role, speaker, is_episode, sim)."""
    n = len(rows)
    return Signals(
        ids=list(range(n)), sim=np.array([r[5] for r in rows], dtype=float), bm25=np.zeros(n),
        session=[r[0] for r in rows], seq=[r[1] for r in rows], speaker=[r[3] for r in rows],
        has_time=np.zeros(n, bool), age_days=np.zeros(n), importance=np.zeros(n), confidence=np.zeros(n),
        untrusted=np.zeros(n, bool), is_episode=np.array([r[4] for r in rows], dtype=bool),
        role=[r[2] for r in rows] if roles else None,
    )


def pairs(sig):
    return [tuple(int(x) for x in p) for p in zip(*neighbour_pairs(sig))]


def test_one_persons_consecutive_remarks_lend_nothing_an_exchange_does():
    sig = scope([("s", 1, "user", "ana", True, 0.1), ("s", 2, "user", "ana", True, 0.2),
                 ("s", 3, "assistant", "", True, 0.3)])
    got = pairs(sig)
    assert (0, 1, 1) not in got and (1, 0, 1) not in got  # ana, then ana again
    assert (1, 2, 1) in got and (2, 1, 1) in got  # ana, then the assistant's reply
    assert (0, 2, 2) in got and (2, 0, 2) in got  # two voices between them
    assert got == sorted(got, key=lambda p: p[0])  # listed memory by memory


def test_sessions_positions_and_facts():
    sig = scope([("a", 5, "user", "ana", True, 0.1), ("b", 6, "assistant", "", True, 0.1),
                 ("a", 6, "assistant", "", True, 0.1), ("a", 6, "", "", False, 0.1),  # a fact of event a/6
                 ("a", None, "user", "ana", True, 0.1), (None, 7, "assistant", "", True, 0.1),
                 ("", 7, "user", "ana", True, 0.1)])
    got = pairs(sig)
    assert not any(1 in (i, j) for i, j, _ in got)  # session b is another conversation
    assert (0, 2, 1) in got and (0, 3, 1) in got  # the episode and the fact of the next event
    assert not any(4 in (i, j) for i, j, _ in got)  # no event position, no neighbours
    assert not any({i, j} == {5, 6} for i, j, _ in got)  # the same seq in two sessions: no neighbours
    # In order: by memory, by distance, the one before first, then by neighbour.
    mine = [p for p in got if p[0] == 0]
    assert mine == [(0, 2, 1), (0, 3, 1)]


def test_without_roles_every_neighbour_lends():
    sig = scope([("s", 1, "user", "ana", True, 0.1), ("s", 2, "user", "ana", True, 0.2)], roles=False)
    assert pairs(sig) == [(0, 1, 1), (1, 0, 1)]


def _reference_pairs(sig):
    voices = None if sig.role is None else {
        (sig.session[i] or "", sig.seq[i]): (sig.role[i] or "", sig.speaker[i])
        for i in range(len(sig.ids)) if sig.is_episode[i] and sig.seq[i] is not None}

    def exchange(session, first, last):
        if voices is None:
            return True
        heard = {voices.get((session or "", s)) for s in range(min(first, last), max(first, last) + 1)} - {None}
        return len(heard) != 1

    out = []
    for i, seq in enumerate(sig.seq):
        if seq is None:
            continue
        for d in range(1, NEIGHBOUR_WINDOW + 1):
            for step in (-d, d):
                for j, other in enumerate(sig.seq):
                    if other == seq + step and sig.session[j] == sig.session[i] and exchange(sig.session[i], seq, other):
                        out.append((i, j, d))
    return out


def _reference_passage(sig):
    out = list(sig.sim)
    episodes = sorted((i for i in range(len(sig.ids)) if sig.is_episode[i] and sig.seq[i] is not None),
                      key=lambda i: (sig.session[i] or "", sig.seq[i], i))
    voices = None if sig.role is None else {
        (sig.session[i] or "", sig.seq[i]): (sig.role[i] or "", sig.speaker[i]) for i in episodes}
    for n, i in enumerate(episodes):
        total, count = sig.sim[i], 1
        for m in (n - 1, n + 1):
            if 0 <= m < len(episodes):
                j = episodes[m]
                a, b = sorted((sig.seq[i], sig.seq[j]))
                heard = set() if voices is None else {voices.get((sig.session[i] or "", s)) for s in range(a, b + 1)} - {None}
                if (sig.session[j] or "") == (sig.session[i] or "") and (voices is None or len(heard) != 1):
                    total, count = total + sig.sim[j], count + 1
        out[i] = PASSAGE_SCALE * total / count if count > 1 else sig.sim[i]
    return np.array(out)


def test_random_scopes_agree_with_a_plain_loop():
    rng = random.Random(7)
    for _ in range(500):
        rows = [(rng.choice([None, "", "a", "b"]), rng.choice([None, *range(rng.randint(0, 3), 12)]),
                 rng.choice(["user", "assistant", None]), rng.choice(["ana", "bo", ""]), rng.random() < 0.7,
                 rng.random()) for _ in range(rng.randint(0, 30))]
        sig = scope(rows, roles=rng.random() < 0.8)
        assert pairs(sig) == _reference_pairs(sig)
        assert np.allclose(passage_similarity(sig), _reference_passage(sig))
