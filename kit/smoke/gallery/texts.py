"""The gallery's text competitions in their MLE-bench public layouts at smoke size. Texts are short (a tiny
encoder reads them in a second) and their labels follow the words: a text's share of words from the
"marked" list rises with its label, so a model that learns which words those are beats the prior."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd

from kit.smoke import packing
from kit.smoke.gallery.pictures import hex_id

PLAIN = ("the a it is was and to of in that this for on with as at by from so but we they you my your "
         "day time people thing way place food work home car city night week year friend family").split()
MARKED = ("idiot stupid moron loser pathetic disgusting awful terrible ugly dumb worthless hate garbage "
          "brilliant superb wonderful").split()


def sentence(rng: np.random.Generator, share: float, words: tuple[int, int] = (6, 14),
             pool: tuple[str, ...] = MARKED) -> str:
    """A few words, each from `pool` with probability `share`, else plain."""
    n = int(rng.integers(*words))
    picked = [pool[int(rng.integers(len(pool)))] if rng.random() < share else PLAIN[int(rng.integers(len(PLAIN)))]
              for _ in range(n)]
    return " ".join(picked).capitalize() + "."


def insults(folder: Path, seed: int = 0, train: int = 160, test: int = 40) -> None:
    """train.csv Insult,Date,Comment (no id; Date YYYYMMDDhhmmssZ or empty; each comment quoted, with its
    escapes, as the raw file holds it), test.csv Date,Comment, sample_submission_null.csv Insult,Date,Comment
    with Insult=0, in test.csv's order. A comment may repeat."""
    rng = np.random.default_rng(seed)
    insult = (rng.random(train + test) < 0.3).astype(int)
    comments = [f'"{sentence(rng, 0.45 if y else 0.03)}\\xa0"' for y in insult]
    comments[-1] = comments[-2]  # the same comment twice: the sample's rows stay matched by order
    dates = [f"2012{m:02d}{d:02d}192155Z" if d % 5 else "" for m, d in zip(rng.integers(1, 13, len(insult)),
                                                                           rng.integers(1, 29, len(insult)))]
    table = pd.DataFrame({"Insult": insult, "Date": dates, "Comment": comments})
    table[:train].to_csv(folder / "train.csv", index=False)
    table[train:][["Date", "Comment"]].to_csv(folder / "test.csv", index=False)
    table[train:].assign(Insult=0).to_csv(folder / "sample_submission_null.csv", index=False)


PIZZA_TEST_FIELDS = ("giver_username_if_known", "request_id", "request_text_edit_aware", "request_title",
                     "requester_account_age_in_days_at_request", "requester_days_since_first_post_on_raop_at_request",
                     "requester_number_of_comments_at_request", "requester_number_of_comments_in_raop_at_request",
                     "requester_number_of_posts_at_request", "requester_number_of_posts_on_raop_at_request",
                     "requester_number_of_subreddits_at_request", "requester_subreddits_at_request",
                     "requester_upvotes_minus_downvotes_at_request", "requester_upvotes_plus_downvotes_at_request",
                     "requester_username", "unix_timestamp_of_request", "unix_timestamp_of_request_utc")
GRATITUDE = ("thanks grateful appreciate kindly pay forward paycheck friday job rent kids bless").split()


def pizza(folder: Path, seed: int = 0, train: int = 150, test: int = 40) -> None:
    """train.json and test.json (lists of records, indent=4; test with the 17 fields known at request time, no
    request_text), train.zip and test.zip holding them, sampleSubmission.csv request_id,requester_received_pizza=0."""
    rng = np.random.default_rng(seed)
    records = []
    for received in rng.random(train + test) < 0.25:
        text = " ".join(sentence(rng, 0.5 if received else 0.05, pool=GRATITUDE) for _ in range(2))
        user = f"user_{hex_id(rng, 6)}"
        days = float(rng.uniform(0, 900))
        stamp = float(1.3e9 + rng.uniform(0, 6e7))
        records.append({
            "giver_username_if_known": "N/A", "number_of_downvotes_of_request_at_retrieval": int(rng.integers(0, 5)),
            "number_of_upvotes_of_request_at_retrieval": int(rng.integers(0, 20)), "post_was_edited": False,
            "request_id": f"t3_{hex_id(rng, 5)}", "request_number_of_comments_at_retrieval": int(rng.integers(0, 30)),
            "request_text": text, "request_text_edit_aware": text,
            "request_title": f"[Request] {sentence(rng, 0.3 if received else 0.05, (3, 7), GRATITUDE)}",
            "requester_account_age_in_days_at_request": days, "requester_account_age_in_days_at_retrieval": days + 500,
            "requester_days_since_first_post_on_raop_at_request": 0.0,
            "requester_days_since_first_post_on_raop_at_retrieval": 500.0,
            "requester_number_of_comments_at_request": int(rng.integers(0, 900)),
            "requester_number_of_comments_at_retrieval": int(rng.integers(0, 900)),
            "requester_number_of_comments_in_raop_at_request": 0, "requester_number_of_comments_in_raop_at_retrieval": 1,
            "requester_number_of_posts_at_request": int(rng.integers(0, 50)),
            "requester_number_of_posts_at_retrieval": int(rng.integers(0, 50)),
            "requester_number_of_posts_on_raop_at_request": 0, "requester_number_of_posts_on_raop_at_retrieval": 1,
            "requester_number_of_subreddits_at_request": 2, "requester_received_pizza": bool(received),
            "requester_subreddits_at_request": ["AskReddit", "pizza"],
            "requester_upvotes_minus_downvotes_at_request": int(rng.integers(0, 900)),
            "requester_upvotes_minus_downvotes_at_retrieval": int(rng.integers(0, 900)),
            "requester_upvotes_plus_downvotes_at_request": int(rng.integers(900, 2000)),
            "requester_upvotes_plus_downvotes_at_retrieval": int(rng.integers(900, 2000)),
            "requester_user_flair": "shroom" if received else None, "requester_username": user,
            "unix_timestamp_of_request": stamp, "unix_timestamp_of_request_utc": stamp - 3600})
    hidden = [{k: r[k] for k in PIZZA_TEST_FIELDS} for r in records[train:]]
    for name, value in (("train", records[:train]), ("test", hidden)):
        (folder / f"{name}.json").write_text(json.dumps(value, indent=4))
        packing.write_zip(folder / f"{name}.json", folder / f"{name}.zip")
    pd.DataFrame({"request_id": [r["request_id"] for r in hidden], "requester_received_pizza": 0}).to_csv(
        folder / "sampleSubmission.csv", index=False)


WINNERS = ["winner_model_a", "winner_model_b", "winner_tie"]
MODELS = ("gpt-4-1106-preview", "claude-2.1", "llama-2-70b-chat", "mixtral-8x7b-instruct-v0.1")


def lmsys(folder: Path, seed: int = 0, train: int = 150, test: int = 30) -> None:
    """train.csv id,model_a,model_b,prompt,response_a,response_b and one-hot winner_model_a/_b/winner_tie
    (prompt and responses JSON-encoded lists of strings), test.csv id,prompt,response_a,response_b,
    sample_submission.csv id + the three columns at 1/3. The response rich in marked words wins, else a tie."""
    rng = np.random.default_rng(seed)
    n = train + test
    rich = rng.integers(0, 3, n)  # 0: a is richer, 1: b is, 2: neither
    ids = 30_192 + np.cumsum(rng.integers(1, 20_000_000, n))  # distinct ints up to about 4e9, as the raw ids
    rows = []
    for i in range(n):
        share = (0.5, 0.03) if rich[i] == 0 else (0.03, 0.5) if rich[i] == 1 else (0.05, 0.05)
        a, b = (json.dumps([sentence(rng, s, pool=MARKED[-3:] + GRATITUDE)]) for s in share)
        rows.append({"id": ids[i], "model_a": MODELS[i % 4], "model_b": MODELS[(i + 1) % 4],
                     "prompt": json.dumps([sentence(rng, 0.0, (4, 9))]), "response_a": a, "response_b": b,
                     **{c: int(rich[i] == k) for k, c in enumerate(WINNERS)}})
    table = pd.DataFrame(rows).iloc[rng.permutation(n)]
    table[:train].to_csv(folder / "train.csv", index=False)
    table[train:][["id", "prompt", "response_a", "response_b"]].to_csv(folder / "test.csv", index=False)
    table[train:][["id"]].assign(**{c: 0.3333333333333333 for c in WINNERS}).to_csv(folder / "sample_submission.csv",
                                                                                   index=False)


QUEST_TARGETS = ("question_asker_intent_understanding question_body_critical question_conversational "
                 "question_expect_short_answer question_fact_seeking question_has_commonly_accepted_answer "
                 "question_interestingness_others question_interestingness_self question_multi_intent "
                 "question_not_really_a_question question_opinion_seeking question_type_choice question_type_compare "
                 "question_type_consequence question_type_definition question_type_entity question_type_instructions "
                 "question_type_procedure question_type_reason_explanation question_type_spelling question_well_written "
                 "answer_helpful answer_level_of_information answer_plausible answer_relevance answer_satisfaction "
                 "answer_type_instructions answer_type_procedure answer_type_reason_explanation "
                 "answer_well_written").split()
QUEST_FEATURES = ["qa_id", "question_title", "question_body", "question_user_name", "question_user_page", "answer",
                  "answer_user_name", "answer_user_page", "url", "category", "host"]


def google_quest(folder: Path, seed: int = 0, train: int = 150, test: int = 30) -> None:
    """train.csv: 11 feature columns (qa_id, question_title, question_body, ..., host) and the 30 targets (raters'
    shares in [0, 1]); test.csv the 11; sample_submission.csv qa_id + the 30, each 0 to 1 down the rows. Each
    target follows the answer's share of marked words, up or down, on its own scale of rater shares."""
    rng = np.random.default_rng(seed)
    n = train + test
    quality = rng.random(n)
    sign = rng.choice([-1.0, 1.0], len(QUEST_TARGETS))
    rows = []
    for i in range(n):
        host = ["stackoverflow.com", "english.stackexchange.com", "superuser.com"][i % 3]
        user = f"user{int(rng.integers(1, 99999))}"
        row = {"qa_id": int(rng.integers(0, 9648)) * 1000 + i, "question_title": sentence(rng, 0.0, (4, 8)),
               "question_body": sentence(rng, 0.1), "question_user_name": user,
               "question_user_page": f"https://{host}/users/{i}", "answer": sentence(rng, 0.6 * quality[i]),
               "answer_user_name": f"{user}x", "answer_user_page": f"https://{host}/users/{i + 1}",
               "url": f"http://{host}/questions/{i}", "category": ["TECHNOLOGY", "CULTURE", "SCIENCE"][i % 3], "host": host}
        for j, column in enumerate(QUEST_TARGETS):
            level = quality[i] if sign[j] > 0 else 1 - quality[i]
            row[column] = float(np.clip(np.round((level + rng.normal(0, 0.15)) * 3) / 3, 0, 1))
        rows.append(row)
    table = pd.DataFrame(rows)
    table[:train].to_csv(folder / "train.csv", index=False)
    table[train:][QUEST_FEATURES].to_csv(folder / "test.csv", index=False)
    sample = table[train:][["qa_id"]].copy()
    for column in QUEST_TARGETS:
        sample[column] = np.linspace(0, 1, test)
    sample.to_csv(folder / "sample_submission.csv", index=False)


IDENTITIES = ["male", "female", "homosexual_gay_or_lesbian", "christian", "jewish", "muslim", "black", "white",
              "psychiatric_or_mental_illness"]
JIGSAW_COLUMNS = ("id target comment_text severe_toxicity obscene identity_attack insult threat asian atheist bisexual "
                  "black buddhist christian female heterosexual hindu homosexual_gay_or_lesbian "
                  "intellectual_or_learning_disability jewish latino male muslim other_disability other_gender "
                  "other_race_or_ethnicity other_religion other_sexual_orientation physical_disability "
                  "psychiatric_or_mental_illness transgender white created_date publication_id parent_id article_id rating "
                  "funny wow sad likes disagree sexual_explicit identity_annotator_count "
                  "toxicity_annotator_count").split()


def jigsaw(folder: Path, seed: int = 0, train: int = 200, test: int = 40) -> None:
    """train.csv: the 45 raw columns (target the share of raters who said toxic; the identity columns shares too,
    empty where no rater was asked), test.csv id,comment_text, sample_submission.csv id,prediction=0.0."""
    rng = np.random.default_rng(seed)
    n = train + test
    toxic = rng.random(n) < 0.3
    ids = np.arange(n) + 239_579
    table = pd.DataFrame({"id": ids})
    for column in JIGSAW_COLUMNS[1:]:
        table[column] = np.nan
    table["target"] = np.where(toxic, rng.uniform(0.5, 1.0, n), rng.uniform(0.0, 0.4, n)).round(6)
    table["comment_text"] = [sentence(rng, 0.45 if t else 0.03) for t in toxic]
    for column in ("severe_toxicity", "obscene", "identity_attack", "insult", "threat", "sexual_explicit"):
        table[column] = (table["target"] * rng.uniform(0, 1, n)).round(6)
    asked = rng.random(n) < 0.6  # rows whose raters were asked about identities: 0.0 or a share, else empty
    for column in JIGSAW_COLUMNS[8:32]:
        table[column] = np.where(asked, np.where(rng.random(n) < 0.25, rng.uniform(0.5, 1.0, n).round(1), 0.0), np.nan)
    table["created_date"] = "2015-09-29 10:50:41.987077+00"
    table["publication_id"], table["parent_id"], table["article_id"] = 2, np.nan, 2006
    table["rating"] = np.where(toxic, "rejected", "approved")
    for column in ("funny", "wow", "sad", "likes", "disagree"):
        table[column] = rng.integers(0, 3, n)
    table["identity_annotator_count"] = np.where(asked, 4, 0)
    table["toxicity_annotator_count"] = 4
    table[:train].to_csv(folder / "train.csv", index=False)
    table[train:][["id", "comment_text"]].to_csv(folder / "test.csv", index=False)
    pd.DataFrame({"id": ids[train:], "prediction": 0.0}).to_csv(folder / "sample_submission.csv", index=False)


GOOD, BAD = ("great charming moving brilliant funny"), ("dull boring mess awful tedious")


def movie_reviews(folder: Path, seed: int = 0, sentences: int = 40, phrases: int = 5, test_share: float = 0.3) -> None:
    """train.tsv.zip and test.tsv.zip (one TSV each at the root: PhraseId,SentenceId,Phrase[,Sentiment]; an empty
    phrase written as an empty field), sampleSubmission.csv PhraseId,Sentiment=2. Each sentence, then shorter
    phrases of it; a phrase's sentiment (0 to 4) is its count of good words less its bad ones."""
    rng = np.random.default_rng(seed)
    good, bad = GOOD.split(), BAD.split()
    rows, phrase_id = [], 1
    for s in range(1, sentences + 1):
        words = [(good if rng.random() < 0.5 else bad)[int(rng.integers(5))] if rng.random() < 0.3 else
                 PLAIN[int(rng.integers(len(PLAIN)))] for _ in range(int(rng.integers(8, 16)))]
        for k in range(phrases):
            span = words if k == 0 else words[int(rng.integers(0, len(words) // 2)):][: int(rng.integers(1, 6))]
            tone = sum(w in good for w in span) - sum(w in bad for w in span)
            rows.append((phrase_id, s, " ".join(span), int(np.clip(2 + tone, 0, 4))))
            phrase_id += 1
    table = pd.DataFrame(rows, columns=["PhraseId", "SentenceId", "Phrase", "Sentiment"])
    order = rng.permutation(len(table))
    hidden = np.zeros(len(table), bool)
    hidden[order[: int(len(table) * test_share)]] = True
    # a phrase the raw file spells "null" in each split: read as NaN, written back empty (under 1% of train's rows)
    table.loc[[np.flatnonzero(~hidden)[0], np.flatnonzero(hidden)[0]], "Phrase"] = np.nan
    staging = folder / ".staging"
    staging.mkdir()
    table.loc[~hidden].iloc[rng.permutation(int((~hidden).sum()))].to_csv(staging / "train.tsv", sep="\t", index=False)
    answers = table.loc[hidden]
    answers.drop(columns="Sentiment").to_csv(staging / "test.tsv", sep="\t", index=False)
    for name in ("train.tsv", "test.tsv"):
        packing.write_zip(staging / name, folder / f"{name}.zip")
    shutil.rmtree(staging)
    answers[["PhraseId"]].assign(Sentiment=2).to_csv(folder / "sampleSubmission.csv", index=False)
