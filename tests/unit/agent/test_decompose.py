"""The deterministic supervisor's language side (relayrag.agent.decompose): clause splitting in English and
Japanese, references back to an earlier part, the entities a table result names, and the keyword query."""

from relayrag.agent.decompose import keyword_query, reference, resolve, row_entities, split_parts


def test_english_clauses_split_at_conjunctions_before_a_question_word_and_between_sentences():
    assert split_parts("Which three countries have the most customers, and what does our refund policy say "
                       "about them?") == ["Which three countries have the most customers",
                                          "what does our refund policy say about them?"]
    assert split_parts("How many bees are there? What do they eat?") == ["How many bees are there?",
                                                                         "What do they eat?"]
    assert split_parts("List the genres; then show the longest track.") == ["List the genres",
                                                                            "show the longest track."]
    # "and" between nouns, a single question, a short fragment: one part
    for q in ("Who is responsible for the inspection and the repair?", "What does the notice propose?",
              "Tom and Jerry?"):
        assert split_parts(q) == [q]


def test_japanese_clauses_split_at_sentence_ends_embedded_questions_and_connectives():
    assert split_parts("顧客が最も多い3つの国はどこですか？また、返金ポリシーはそれらの国について何と言っていますか？") == [
        "顧客が最も多い3つの国はどこですか？", "返金ポリシーはそれらの国について何と言っていますか？"]
    assert split_parts("2023年に最も購入した顧客は誰か、返金ポリシーは彼らについて何と言っていますか") == [
        "2023年に最も購入した顧客は誰か", "返金ポリシーは彼らについて何と言っていますか"]
    assert split_parts("東京で、最も売れた曲は？") == ["東京で、最も売れた曲は？"]  # a location phrase is not a clause
    # a question word + で ends a clause when a later clause refers back; that clause then asks どこ？
    assert split_parts("顧客が最も多い3か国はどこで、返金ポリシーはそれらについて何と言っていますか？") == [
        "顧客が最も多い3か国はどこ？", "返金ポリシーはそれらについて何と言っていますか？"]
    assert split_parts("東京タワーはどこで、高さは何メートルですか？") == ["東京タワーはどこで、高さは何メートルですか？"]
    assert split_parts("どこで買えますか？") == ["どこで買えますか？"]


def test_references_and_their_resolution():
    assert reference("what does our refund policy say about them?") == "them"
    assert reference("How many tracks are there?") is None
    assert resolve("what does our refund policy say about them?", "them", "Canada") == \
        "what does our refund policy say about Canada?"
    assert resolve("what are their refund rights?", "their", "Brazil") == "what are Brazil's refund rights?"
    ref = reference("返金ポリシーはそれらの国について何と言っていますか？")
    assert ref == "それらの国"
    assert resolve("返金ポリシーはそれらの国について何と言っていますか？", ref, "ブラジル") == \
        "返金ポリシーはブラジルについて何と言っていますか？"


def test_row_entities_are_the_text_cells_of_the_first_rows():
    assert row_entities([["USA", 13], ["Canada", 8], ["Brazil", 5], ["France", 5]]) == ["USA", "Canada", "Brazil"]
    assert row_entities([["Hugh", "O'Reilly", "Ireland", 32.75], [None, 3.5, "2023-01-02"]]) == \
        ["Hugh O'Reilly Ireland"]
    assert row_entities([]) == [] and row_entities([[1, 2.5]]) == []


def test_keyword_query_keeps_the_content_words():
    assert keyword_query("what does our refund policy say about Canada?") == "refund policy Canada"
    assert keyword_query("What is it?") == "What is it?"  # nothing left: the part itself
    assert keyword_query("返金ポリシーは？") == "返金ポリシーは？"
