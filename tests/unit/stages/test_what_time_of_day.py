"""A "what time" question asks a time of day (issue 31): a year or a date alone does not state one.

Found when the answer step read one more passage from grade's ambiguous band: "What time does the reception at the
Porto service centre open?" was answered by "The Brno plant opened in 2004 and the Porto service centre in 2011."
"When …?" keeps every date and year."""

import pytest


@pytest.mark.parametrize("question", [
    "What time does the reception at the Porto service centre open?", "At what time does the canteen close?",
    "By what time must the forms be handed in?"])
def test_what_time_is_not_answered_by_a_year_or_a_date(question):
    """The answer step read one more passage from the band ("The Brno plant opened in 2004 and the Porto service
    centre in 2011.") and took its years for the time of day asked: a year or a date alone does not say a time."""
    from relayrag.stages.answer_shape import states_wh_type
    for text in ("The Brno plant opened in 2004 and the Porto service centre in 2011.",
                 "The next review takes place on 18 March.", "The office was refurbished in 2019."):
        assert not states_wh_type("when", text, question=question), text
    for text in ("It opens at 07:30 on weekdays.", "It closes at 5 pm.", "Hand it in by noon.",
                 "It closes 30 minutes before the last sailing."):
        assert states_wh_type("when", text, question=question), text
    assert states_wh_type("when", "The plant opened in 2004.", question="When did the plant open?")
