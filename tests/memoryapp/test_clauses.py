"""A message's clauses, each worth a vector of its own. Phrasings written for these tests."""
from memoryapp.clauses import MAX_CLAUSES, statement_clauses


def test_a_fact_said_in_passing_is_a_clause_of_its_own():
    text = "the heating in our Glasgow flat broke again, anyway could you help me write to the letting agent"
    assert statement_clauses(text) == ["the heating in our Glasgow flat broke again",
                                       "anyway could you help me write to the letting agent"]


def test_sentences_dashes_and_semicolons_end_clauses():
    assert statement_clauses("I sing in a choir. We rehearse on Tuesdays!") == [
        "I sing in a choir.", "We rehearse on Tuesdays!"]
    assert statement_clauses("new job at the museum — so far so good; long commute though") == [
        "new job at the museum", "so far so good;", "long commute though"]


def test_one_clause_gets_none_and_short_scraps_are_not_clauses():
    assert statement_clauses("I sing in a choir on Tuesdays.") == []
    assert statement_clauses("ok. thanks!") == []
    assert statement_clauses("Yes. I sing in a choir.") == []  # "Yes." alone is no clause
    assert statement_clauses("") == []


def test_commas_inside_a_clause_do_not_split_it():
    assert statement_clauses("I bought apples, pears, and plums at the market") == []


def test_long_texts_are_bounded():
    many = " ".join(f"Sentence number {i} is here." for i in range(20))
    assert len(statement_clauses(many)) == MAX_CLAUSES
    assert statement_clauses("word " * 1000) == []
