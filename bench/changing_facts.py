"""The seed-000 experiment, "when facts change", run through the memory service.

Synthetic conversations of 50 user turns, each with 8 facts about the user mixed into small talk,
3 of them changed later; at the end one question per fact. 250 conversations over five random
seeds. Every turn goes through the service as an event: event_append, then the extraction job
(run in this process by calling jobs.job_run with the real extraction runner, rather than via a
Celery worker, to keep the run short; the code path after the broker is identical), then
memory_search. Beside it, in the same run, the seed's five policies over the raw turns, with the
same sentence encoder and the seed's perfect importance rater (facts 8, small talk 3).

A shown memory counts for a fact version through its evidence events: a memory evidenced by the
turn that stated the current value shows "current", by a turn that stated the old value
"outdated". Phrasings are this file's own and vary widely: several templates per fact type and
changes phrased with and without correction cues.

    .venv/bin/python bench/changing_facts.py [--conversations-per-seed 50] [--seeds 0 1 2 3 4] [--keep]

What it measures: the phrasings below were written beside the extraction rules, so its 99 %
says the rules know these sentences, not that the product keeps facts current on what people
actually say. It stays as a regression check of those rules. Generalisation is measured by
bench/changing_facts_blind.py, on phrasings written by someone who had not read the rules, split
into dev (tuned on) and held-out (run once).
"""
from __future__ import annotations

import argparse
import os
import random
import sys
import time
from collections import Counter
from datetime import datetime, timedelta, timezone as dt_timezone

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench import benchdb  # noqa: E402

TURNS = 50
N_FACTS = 8
N_CHANGED = 3
KS = (1, 3, 5)
DB_NAME = "bench_changing_facts"

CITIES = ["Lisbon", "Denver", "Osaka", "Nairobi", "Glasgow", "Krakow", "Montreal", "Valparaiso", "Hobart",
          "Tbilisi", "Bergen", "Cusco", "Leipzig", "Adelaide", "Porto", "Seville", "Halifax", "Tampere"]
JOBS = ["teacher", "nurse", "data engineer", "architect", "pharmacist", "carpenter", "journalist",
        "accountant", "pilot", "chef", "veterinarian", "electrician", "librarian", "translator", "dentist"]
COMPANIES = ["Globex", "Initech", "Hooli", "Vandelay Industries", "Stark Industries", "Wayne Enterprises",
             "Cyberdyne", "Soylent", "Massive Dynamic", "Tyrell Corporation", "Aperture Labs", "Oscorp"]
PETS = ["dog", "cat", "hamster", "parrot", "rabbit", "turtle", "goldfish", "ferret", "guinea pig", "gecko"]
PET_NAMES = ["Biscuit", "Pepper", "Mochi", "Rusty", "Nala", "Ziggy", "Olive", "Bruno", "Kiwi", "Luna"]
FOODS = ["sushi", "lasagna", "pho", "tacos", "paella", "ramen", "moussaka", "pad thai", "pierogi", "biryani"]
PARTNERS = ["Maria", "Tomas", "Aisha", "Kenji", "Sofia", "Liam", "Priya", "Mateo", "Elena", "Noah"]
CARS = ["Toyota Corolla", "Honda Civic", "Ford Focus", "Tesla Model 3", "Volvo XC60", "Kia Niro",
        "Mazda CX-5", "Subaru Outback", "Fiat Panda", "BMW i3"]
SPORTS = ["tennis", "rugby", "basketball", "cycling", "volleyball", "badminton", "cricket", "rowing", "golf"]
DRINKS = ["green tea", "espresso", "lemonade", "hot chocolate", "kombucha", "iced coffee", "chai", "orange juice"]
HOBBIES = ["pottery", "birdwatching", "chess", "knitting", "rock climbing", "gardening", "woodworking", "baking"]

# fact type -> (values, initial templates, change templates (with and without cues), questions)
FACTS = {
    "home_city": (CITIES, [
        "I live in {v}.", "I'm based in {v}.", "I've been living in {v} for a few years.", "Home for me is {v}.",
        "Just so you know, I live in {v}.", "I'm currently living in {v}, close to the centre.",
    ], [
        "Actually, things changed: I moved to {v}.", "I relocated to {v} last month.", "I live in {v} now.",
        "Quick update: I'm now living in {v}.", "We just moved to {v}, still unpacking.",
        "I don't live in the old place anymore, I live in {v}.", "Since the spring I've been living in {v}.",
    ], ["Where does the user live?", "Which city is the user's home?", "What city does the user live in?",
        "In which town is the user based these days?", "Where is the user's home now?"]),
    "job": (JOBS, [
        "I work as a {v}.", "I'm a {v}.", "My job is {v}.", "By profession I'm a {v}.",
        "I've worked as a {v} for years.", "I earn my living as a {v}.",
    ], [
        "Actually, things changed: I work as a {v}.", "I switched careers and became a {v}.",
        "I'm now working as a {v}.", "I retrained as a {v} this year.", "These days I work as a {v}.",
        "Correction: I'm a {v} now.",
    ], ["What is the user's job?", "What does the user do for a living?", "What is the user's profession?",
        "What line of work is the user in?", "What's the user's occupation?"]),
    "employer": (COMPANIES, [
        "I work at {v}.", "I'm employed by {v}.", "My employer is {v}.", "I work for {v}.",
    ], [
        "I just joined {v}.", "I started working at {v} last week.", "I work for {v} now.",
        "Actually, I left my old company and work at {v}.", "My new employer is {v}.",
    ], ["Which company does the user work for?", "Who is the user's employer?", "Where is the user employed?"]),
    "pet": (PETS, [
        "My pet is a {v}.", "I have a {v}.", "I have a {v} named {n}.", "My {v} is called {n}.",
        "I adopted a {v} called {n} a while ago.",
    ], [
        "Actually, things changed: My pet is a {v}.", "I adopted a {v} named {n}.", "I now have a {v}.",
        "My pet is a {v} these days.", "Update: I got a {v} called {n}.",
    ], ["What pet does the user have?", "What kind of animal is the user's pet?",
        "Does the user have an animal at home?"]),
    "food": (FOODS, [
        "My favourite food is {v}.", "My favorite food is {v}.", "{v} is my favourite food.",
        "My all-time favourite dish is {v}.",
    ], [
        "Actually, my favourite food is {v} now.", "These days my favourite food is {v}.",
        "My favourite food has become {v}.", "{v} is my new favourite food.",
    ], ["What is the user's favourite food?", "Which dish does the user like best?",
        "What does the user love to eat most?"]),
    "partner": (PARTNERS, [
        "My wife is called {v}.", "My partner's name is {v}.", "I'm married to {v}.", "My husband is {v}.",
    ], [
        "I'm now dating {v}.", "My partner is {v} now.", "Actually, my partner's name is {v}.",
        "I'm engaged to {v}.",
    ], ["What is the name of the user's partner?", "Who is the user's partner?",
        "Who is the user in a relationship with?"]),
    "car": (CARS, [
        "I drive a {v}.", "My car is a {v}.", "I own a {v}.",
    ], [
        "I bought a {v} last week.", "I drive a {v} now.", "Actually, my car is a {v} these days.",
        "I traded in my old car and now drive a {v}.",
    ], ["What car does the user drive?", "What kind of car does the user have?", "What vehicle does the user own?"]),
    "sport": (SPORTS, [
        "My favourite sport is {v}.", "{v} is my favourite sport.", "My favorite sport is {v}.",
    ], [
        "Actually, my favourite sport is {v} now.", "These days my favourite sport is {v}.",
        "{v} has become my favourite sport.",
    ], ["What is the user's favourite sport?", "Which sport does the user like most?",
        "What sport is the user into?"]),
    "drink": (DRINKS, [
        "My favourite drink is {v}.", "My go-to drink is {v}.", "{v} is my favourite drink.",
    ], [
        "My favourite drink is {v} now.", "Actually, these days my favourite drink is {v}.",
        "I've switched: my favourite drink is {v}.",
    ], ["What is the user's favourite drink?", "What does the user like to drink?",
        "What's the user's go-to beverage?"]),
    "hobby": (HOBBIES, [
        "My hobby is {v}.", "My main hobby is {v}.", "In my spare time, my hobby is {v}.",
    ], [
        "I've taken up {v}.", "My hobby is {v} now.", "Actually, my main hobby these days is {v}.",
    ], ["What is the user's hobby?", "What does the user do in their spare time?",
        "How does the user like to spend free time?"]),
}

SMALL_TALK = [
    "The weather is lovely this afternoon.", "I watched a great documentary about whales yesterday.",
    "Traffic was terrible this morning.", "Can you recommend a good podcast?", "haha that's funny",
    "I'm tired today.", "My team won the match last night!", "I had pasta for lunch.", "thanks!",
    "I need to buy groceries later.", "We went hiking on Saturday.", "The meeting ran long.",
    "I'm reading a mystery novel at the moment.", "Do you know any good jokes?", "ok, got it",
    "That's a helpful answer, thanks.", "My friend lives in Paris.", "My sister works as a nurse.",
    "What time is it in Tokyo?", "brb", "The coffee machine at the office is broken again.",
    "I'm stuck in traffic right now.", "Did you see the news about the election?", "Good morning!",
    "It might rain tomorrow.", "I forgot my umbrella today.", "Let's talk about something else.",
    "My neighbour's dog barks all night.", "I should sleep more.", "The train was late again.",
    "Can you summarise that article for me?", "I'm planning dinner, any ideas?", "Nice, that makes sense.",
    "My colleague drives a huge truck.", "I'm not sure what to cook tonight.", "That movie was too long.",
]


def make_conversation(rng: random.Random):
    """50 turns (text, importance, fact type or None, version), and the questions."""
    types = rng.sample(list(FACTS), N_FACTS)
    changed = set(rng.sample(types, N_CHANGED))
    slots = list(range(TURNS))
    first_turns = sorted(rng.sample(range(0, 30), N_FACTS))
    rng.shuffle(first_turns)
    turns: list = [None] * TURNS
    plan = {}
    for t, turn in zip(types, first_turns):
        plan[t] = [turn]
    for t in changed:
        plan[t].append(rng.choice([s for s in range(max(plan[t][0] + 5, 30), TURNS)
                                   if s not in sum(plan.values(), [])]))
    for t, positions in plan.items():
        values, initial, changes, _ = FACTS[t]
        chosen = rng.sample(values, len(positions))
        for version, (pos, value) in enumerate(zip(positions, chosen)):
            template = rng.choice(initial if version == 0 else changes)
            article = "an" if value[0].lower() in "aeiou" else "a"
            text = template.replace("a {v}", "{a} {v}").format(v=value, a=article, n=rng.choice(PET_NAMES))
            turns[pos] = (text[0].upper() + text[1:], 8, t, version)
    for s in slots:
        if turns[s] is None:
            turns[s] = (rng.choice(SMALL_TALK), 3, None, None)
    questions = [(t, rng.choice(FACTS[t][3])) for t in types]
    return turns, questions, changed


def seed_policy(policy: str, importance: np.ndarray, E: np.ndarray, q: np.ndarray, k: int) -> list[int]:
    """The seed's policies, as written there."""
    now = len(E)
    rel = E @ q
    if policy == "last k turns":
        return list(range(now - k, now))
    if policy == "most relevant k":
        return list(np.argsort(-rel)[:k])
    recency = 0.99 ** (now - 1 - np.arange(now))
    norm = lambda x: (x - x.min()) / (x.max() - x.min() + 1e-9)  # noqa: E731
    use = {"recency + importance + relevance": (1, 1), "recency + relevance": (1, 0),
           "importance + relevance": (0, 1)}[policy]
    score = use[0] * norm(recency) + use[1] * norm(importance) + norm(rel)
    return list(np.argsort(-score)[:k])


POLICIES = ["last k turns", "most relevant k", "recency + importance + relevance", "recency + relevance",
            "importance + relevance"]


def classify(shown_turns: set[int], current: int, outdated: set[int]) -> str:
    has_current, has_old = current in shown_turns, bool(shown_turns & outdated)
    return {(True, False): "current only", (True, True): "both", (False, True): "outdated only",
            (False, False): "neither"}[(has_current, has_old)]


def run(args) -> None:
    benchdb.django_setup()
    from django.db import transaction

    from memoryapp import embeddings
    from memoryapp.actors import Actor
    from memoryapp.models import Memory, MemoryEvidence
    from memoryapp.retrieval import memory_search
    from memoryapp.services.events import EventInput, event_append
    from memoryapp.services.jobs import job_run
    from memoryapp.services.tenants import tenant_create
    from memoryapp.tenancy import tenant_activate
    from workers.tasks import JOB_RUNNERS, resolve

    benchdb.use(DB_NAME, create=True)
    # Extraction runs in this process; the after-commit publish to a broker is not needed.
    import logging

    logging.getLogger("memoryapp.dispatch").setLevel(logging.ERROR)
    embeddings.warm_up()
    tenant = tenant_create(slug=f"changing-facts-{int(time.time())}")
    actor = Actor("system", "bench")
    runners = {"extraction": resolve(JOB_RUNNERS["extraction"])}
    results: dict = {}
    base = datetime.now(dt_timezone.utc) - timedelta(days=2)
    start = time.perf_counter()
    n_conv = 0
    examples = []
    for seed in args.seeds:
        rng = random.Random(seed)
        for c in range(args.conversations_per_seed):
            turns, questions, changed = make_conversation(rng)
            subject = f"s{seed}-c{c}"
            events = [EventInput(f"t{i}", "user", text, occurred_at=base + timedelta(minutes=i))
                      for i, (text, *_rest) in enumerate(turns)]
            _, job = event_append(tenant=tenant, subject_ref=subject, events=events, actor=actor)
            job_run(tenant_id=tenant.pk, job_id=str(job.id), runners=runners)
            n_conv += 1
            with transaction.atomic():
                tenant_activate(tenant=tenant)
                evmap: dict = {}
                for memory_id, event_id in MemoryEvidence.objects.filter(
                    tenant=tenant, memory__subject__external_id=subject
                ).values_list("memory_id", "event__event_id"):
                    evmap.setdefault(memory_id, set()).add(int(event_id[1:]))
                # The seed's policies use the raw turn embeddings: the episodes' vectors are exactly that.
                E = np.zeros((TURNS, embeddings.DIMENSIONS), dtype=np.float32)
                for event_id, vector in Memory.objects.filter(
                    tenant=tenant, subject__external_id=subject, memory_type="episodic"
                ).values_list("source_event__event_id", "embedding"):
                    E[int(event_id[1:])] = np.asarray(vector, dtype=np.float32)
            importance = np.array([imp for _, imp, _, _ in turns], dtype=np.float32)
            # Of the questions as asked: these events have no speakers, so search_text(q) == q.
            qvecs = embeddings.embed_texts([q for _, q in questions])
            for (ftype, question), qvec in zip(questions, qvecs):
                positions = [i for i, (_, _, t, _) in enumerate(turns) if t == ftype]
                current, outdated = positions[-1], set(positions[:-1])
                with transaction.atomic():
                    tenant_activate(tenant=tenant)
                    hits = memory_search(tenant=tenant, subject_ref=subject, query=question, k=max(KS),
                                         query_embedding=qvec)
                for k in KS:
                    shown = set().union(*[evmap.get(h.memory.pk, set()) for h in hits[:k]]) if hits else set()
                    verdict = classify(shown, current, outdated)
                    results.setdefault(("memory service (ours)", k), Counter())[verdict] += 1
                    if k == 1 and verdict != "current only" and len(examples) < args.examples:
                        examples.append((question, verdict, [turns[p][0] for p in positions],
                                         [h.memory.statement for h in hits[:1]]))
                for policy in POLICIES:
                    for k in KS:
                        shown = set(int(i) for i in seed_policy(policy, importance, E, qvec, k))
                        results.setdefault((policy, k), Counter())[classify(shown, current, outdated)] += 1
            if n_conv % 25 == 0:
                print(f"  {n_conv} conversations, {time.perf_counter() - start:.0f} s", file=sys.stderr)
    elapsed = time.perf_counter() - start
    print(f"\n{n_conv} conversations x {TURNS} turns, {N_FACTS} facts ({N_CHANGED} changed), seeds {args.seeds}; "
          f"{elapsed:.0f} s\n")
    header = f"{'policy':<36}{'k':>3}  {'current only':>12} {'both':>6} {'outdated only':>14} {'neither':>8}"
    print(header)
    for name in ["memory service (ours)", *POLICIES]:
        for k in KS:
            counts = results[(name, k)]
            total = sum(counts.values())
            pct = {v: 100 * counts[v] / total for v in ("current only", "both", "outdated only", "neither")}
            print(f"{name:<36}{k:>3}  {pct['current only']:>11.1f}% {pct['both']:>5.1f}% "
                  f"{pct['outdated only']:>13.1f}% {pct['neither']:>7.1f}%")
    ours1, ours5 = results[("memory service (ours)", 1)], results[("memory service (ours)", 5)]
    t1, t5 = sum(ours1.values()), sum(ours5.values())
    print("\ntargets: k=1 current only >= 97%: {:.1f}%  k=1 outdated only <= 1%: {:.1f}%  k=5 both <= 3%: {:.1f}%".format(
        100 * ours1["current only"] / t1, 100 * ours1["outdated only"] / t1, 100 * ours5["both"] / t5))
    if examples:
        print("\nmisses at k=1 (question, verdict, fact turns, shown):")
        for ex in examples:
            print("  ", ex)
    if not args.keep:
        benchdb.drop(DB_NAME)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument("--conversations-per-seed", type=int, default=50)
    parser.add_argument("--examples", type=int, default=15)
    parser.add_argument("--keep", action="store_true", help="keep the bench database afterwards")
    run(parser.parse_args())


if __name__ == "__main__":
    main()
