"""Two statements answering the same question with different values, told from their words.
Phrasings here were written for these tests, not taken from any evaluation set."""
import pytest

from memoryapp.frames import ended_or_replaced, same_frame, says_change


@pytest.mark.parametrize("earlier,later", [
    ("I prefer coffee.", "I prefer tea now."),
    ("User prefers window seats on flights", "User prefers aisle seats on flights"),
    ("My favourite painter is Vermeer", "My favourite painter is Hokusai"),
    ("We bank with Triodos.", "we bank with Monzo these days"),
    ("I take the 42 bus to work", "I take the 19 bus to work"),
    ("The user's preferred editor is Vim", "The user's preferred editor is VS Code"),
    ("I eat meat", "I no longer eat meat"),
    ("I'm a member of the chess club", "I'm not a member of the chess club anymore"),
])
def test_the_same_question_answered_with_another_value_shares_a_frame(earlier, later):
    assert same_frame(earlier, later)


@pytest.mark.parametrize("earlier,later", [
    ("I prefer coffee.", "I prefer coffee."),                           # the same statement again
    ("I'm so tired today", "I'm so glad it's Friday"),                  # only function words shared
    ("I prefer coffee.", "The meeting moved to Thursday afternoon."),   # another question
    ("I live in Leeds", "My cousin from Leeds is visiting next week with her two kids"),
    ("I play the cello", "I play"),                                     # a value dropped, none given
    ("My dentist is Dr Okafor", "My dentist said I should floss more and cut down on fizzy drinks"),
])
def test_other_statements_do_not(earlier, later):
    assert not same_frame(earlier, later)


def test_only_a_restatement_that_says_it_changed_is_certain():
    assert says_change("I prefer tea now") and says_change("we switched to oat milk")
    assert not says_change("I prefer tea")
    assert ended_or_replaced("I prefer coffee", "I prefer tea now")
    # Said the same way but without a word of change: ranked first at read time, not retired.
    assert not ended_or_replaced("User prefers window seats", "User prefers aisle seats")


def test_naming_the_person_is_no_frame():
    # "the user" is how agents say "I": sharing it says nothing about what is asked.
    assert not same_frame("The user works as a pilot.", "The user lives in Montreal.")
