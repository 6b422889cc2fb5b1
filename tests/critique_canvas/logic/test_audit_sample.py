import io
from collections import Counter

import pytest

from assets.critique_canvas.logic.audit_sample import (
    ALL_SCOPE,
    AuditCandidate,
    PairOutcome,
    Review,
    SheetError,
    allocate,
    audit_figures,
    draw_sample,
    pair_outcomes,
    parse_review_sheet,
)

DOMAINS = {"photography": 210, "painting": 102, "virtual": 102}
HEADER = "audit_round,pair_id,reviewer,decision,blocking_issues,non_blocking_issues"
SAMPLED = {"r1": {"p1", "p2", "p3"}, "r2": {"p1", "q1"}}


# --- allocate ---------------------------------------------------------------------------------------------


def test_allocate_proportional_by_largest_remainder_ties_to_domain_name():
    # 100 * 210/414 = 50.72, 100 * 102/414 = 24.64 twice: floors 50+24+24 = 98, two left over; the largest
    # remainder (.72) goes to photography, then painting beats virtual on the tie (.64) by name.
    assert allocate(DOMAINS, 100, "proportional") == {"photography": 51, "painting": 25, "virtual": 24}


def test_allocate_equal_ties_to_domain_name():
    # 100 / 3 = 33.33 each: 99 by floor, the one left over goes to the first name, painting.
    assert allocate(DOMAINS, 100, "equal") == {"photography": 33, "painting": 34, "virtual": 33}
    assert allocate({"b": 10, "a": 10}, 3, "equal") == {"a": 2, "b": 1}


def test_allocate_small_domain_hands_its_rest_to_the_others():
    # equal: 30/3 = 10 each, a only has 3; the 7 left: 3.5 each for b and c -> 3 + 3, the extra one to b.
    assert allocate({"a": 3, "b": 50, "c": 50}, 30, "equal") == {"a": 3, "b": 14, "c": 13}
    # proportional: 30*3/103 = .87, 30*50/103 = 14.56 twice -> floors 0+14+14, two left: a (.87), then b (.56 tie, name).
    assert allocate({"a": 3, "b": 50, "c": 50}, 30, "proportional") == {"a": 1, "b": 15, "c": 14}
    # a domain with nothing accepted gets nothing, the size still reached through the others.
    assert allocate({"empty": 0, "b": 5, "c": 5}, 6, "equal") == {"empty": 0, "b": 3, "c": 3}
    quota = allocate({"a": 1, "b": 2, "c": 100}, 60, "equal")
    assert quota == {"a": 1, "b": 2, "c": 57} and sum(quota.values()) == 60


def test_allocate_size_over_total_takes_everything():
    for allocation in ("proportional", "equal"):
        assert allocate(DOMAINS, 10_000, allocation) == DOMAINS
        assert allocate(DOMAINS, 0, allocation) == {"photography": 0, "painting": 0, "virtual": 0}
    assert allocate({}, 5, "equal") == {}


def test_allocate_unknown_allocation_raises():
    with pytest.raises(ValueError, match="'random'"):
        allocate(DOMAINS, 10, "random")


# --- draw_sample ------------------------------------------------------------------------------------------


def _candidates(per_domain: dict[str, int], pairs_per_group: int = 6) -> list[AuditCandidate]:
    return [
        AuditCandidate(f"{domain}-p{n}", f"{domain}-g{n // pairs_per_group}", domain)
        for domain, count in per_domain.items()
        for n in range(count)
    ]


def test_draw_sample_size_and_per_domain_counts():
    candidates = _candidates(DOMAINS)
    sample = draw_sample(candidates, 100, seed=7, allocation="proportional")
    assert len(sample) == 100 and len(set(sample)) == 100
    assert Counter(c.domain for c in sample) == {"photography": 51, "painting": 25, "virtual": 24}
    assert set(sample) <= set(candidates)
    # domains come out in name order
    assert [c.domain for c in sample] == ["painting"] * 25 + ["photography"] * 51 + ["virtual"] * 24
    equal = draw_sample(candidates, 100, seed=7, allocation="equal")
    assert Counter(c.domain for c in equal) == {"photography": 33, "painting": 34, "virtual": 33}


def test_draw_sample_seeded_and_input_order_free():
    candidates = _candidates(DOMAINS)
    first = draw_sample(candidates, 100, seed=7, allocation="proportional")
    assert draw_sample(candidates, 100, seed=7, allocation="proportional") == first
    assert draw_sample(list(reversed(candidates)), 100, seed=7, allocation="proportional") == first
    assert set(draw_sample(candidates, 100, seed=8, allocation="proportional")) != set(first)


def test_draw_sample_one_pair_per_group_before_a_second():
    candidates = _candidates(DOMAINS)  # 6 pairs a group: photography 35 groups, painting and virtual 17 each
    for seed in range(5):
        sample = draw_sample(candidates, 100, seed=seed, allocation="proportional")
        for domain, groups, quota in (("photography", 35, 51), ("painting", 17, 25), ("virtual", 17, 24)):
            per_group = Counter(c.group_id for c in sample if c.domain == domain)
            # every group gives one before any gives two: 35 + 16 = 51, 17 + 8 = 25, 17 + 7 = 24
            assert len(per_group) == groups
            assert Counter(per_group.values()) == {1: groups - (quota - groups), 2: quota - groups}
    # uneven groups: g1 has 1 pair, g2 2, g3 10; 5 = three firsts + the second of g2 and of g3
    uneven = [AuditCandidate("a-0", "g1", "d")] + [AuditCandidate(f"b-{n}", "g2", "d") for n in range(2)]
    uneven += [AuditCandidate(f"c-{n}", "g3", "d") for n in range(10)]
    for seed in range(5):
        picked = draw_sample(uneven, 5, seed=seed, allocation="equal")
        assert Counter(c.group_id for c in picked) == {"g1": 1, "g2": 2, "g3": 2}


def test_draw_sample_small_input_and_size_over_total():
    candidates = _candidates({"painting": 4, "virtual": 3}, pairs_per_group=2)
    everything = draw_sample(candidates, 50, seed=1, allocation="proportional")
    assert sorted(everything, key=lambda c: c.pair_id) == sorted(candidates, key=lambda c: c.pair_id)
    assert draw_sample([], 10, seed=1, allocation="equal") == []
    assert draw_sample(candidates, 0, seed=1, allocation="equal") == []
    with pytest.raises(ValueError):
        draw_sample(candidates, 3, seed=1, allocation="stratified")


def test_draw_sample_other_domain_does_not_move_a_domains_pick_under_equal():
    base = _candidates({"painting": 20, "virtual": 20}, pairs_per_group=3)
    more = base + [AuditCandidate(f"virtual-extra{n}", f"virtual-xg{n}", "virtual") for n in range(30)]
    # equal quotas stay 5 and 5 (10 / 2) with 20 or 50 virtual pairs
    assert allocate({"painting": 20, "virtual": 20}, 10, "equal") == allocate({"painting": 20, "virtual": 50}, 10, "equal")
    painting = [c for c in draw_sample(base, 10, seed=3, allocation="equal") if c.domain == "painting"]
    assert len(painting) == 5
    assert [c for c in draw_sample(more, 10, seed=3, allocation="equal") if c.domain == "painting"] == painting
    # under proportional the quota follows the other domain's growth: 10 * 20/70 = 2.86 -> 3
    assert Counter(c.domain for c in draw_sample(more, 10, seed=3, allocation="proportional"))["painting"] == 3


# --- parse_review_sheet -----------------------------------------------------------------------------------


def _sheet(*rows: str, header: str = HEADER) -> io.StringIO:
    return io.StringIO("\n".join((header, *rows)) + "\n")


def _problems(*rows: str, header: str = HEADER) -> SheetError:
    with pytest.raises(SheetError) as caught:
        parse_review_sheet(_sheet(*rows, header=header), "round1-alice.csv", SAMPLED)
    return caught.value


def test_parse_good_sheet_with_extra_columns_and_multiline_cells():
    header = "audit_round,pair_id,domain,image,instruction,response,reviewer,decision,blocking_issues,non_blocking_issues,comment"
    text = (
        f"{header}\n"
        'r1,p1,painting,img/1.jpg,"Critique the light.\nBe specific.",Warm and soft.,alice,Accept,,'
        '"awkward wording; some repetition",reads fine\n'
        'r1,p1,painting,img/1.jpg,"Critique the light.\nBe specific.",Warm and soft.,bob,REJECT,'
        '"instruction-image mismatch; task not done\nmaterial hallucination",missed secondary point,"wrong\nimage"\n'
        "r1,p2,virtual,img/2.png,Critique it.,Nice.,carol,,,,\n"
        " r2 , q1 ,virtual,img/3.png,Critique it.,Nice.,  dave  ,  accept  ,, ;  ;,\n"
    )
    reviews, blank = parse_review_sheet(io.StringIO(text), "s.csv", SAMPLED)
    assert blank == 1  # carol's row: reviewer named, nothing decided yet
    assert reviews == [
        Review("r1", "p1", "alice", True, (), ("awkward wording", "some repetition"), "reads fine", 2),
        Review(
            "r1", "p1", "bob", False, ("instruction-image mismatch", "task not done", "material hallucination"),
            ("missed secondary point",), "wrong\nimage", 3,
        ),
        Review("r2", "q1", "dave", True, (), (), "", 5),  # cells stripped; empty issue parts dropped
    ]


def test_parse_blank_rows_are_counted_not_reviewed():
    reviews, blank = parse_review_sheet(
        _sheet("r1,p1,alice,,,", ",,,,,", "r1,p2,alice,accept,,", "r9,p9,,,,", "r1,p3,bob,,"), "s.csv", SAMPLED
    )
    # the short row r1,p3,bob,, has fewer cells than the header: read as blank too
    assert blank == 4
    assert [(r.pair_id, r.reviewer, r.accept, r.row) for r in reviews] == [("p2", "alice", True, 4)]
    assert parse_review_sheet(_sheet(), "s.csv", SAMPLED) == ([], 0)


def test_parse_header_names_are_stripped_and_comment_is_optional():
    reviews, _ = parse_review_sheet(
        _sheet("r1,p1,alice,accept,,", header=" audit_round , pair_id,reviewer ,decision,blocking_issues,non_blocking_issues"),
        "s.csv", SAMPLED,
    )
    assert reviews == [Review("r1", "p1", "alice", True, (), (), "", 2)]


def test_parse_missing_columns_is_row_1():
    error = _problems("r1,p1,alice,accept", header="audit_round,pair_id,reviewer,non_blocking_issues")
    assert error.problems == [(1, error.problems[0][1])]
    assert "row 1: missing column(s) decision, blocking_issues" in str(error)
    assert "round1-alice.csv" in str(error)
    assert _problems(header="").problems[0][0] == 1  # an empty file names every column as missing


@pytest.mark.parametrize(
    "row, expected",
    [
        ("r9,p1,alice,accept,,", "audit_round 'r9' has not been drawn (drawn: r1, r2)"),
        ("r1,q1,alice,accept,,", "pair_id 'q1' is not in the sample of audit round 'r1'"),
        ("r1,p1,,accept,,", "reviewer is empty"),
        ("r1,p1,alice,maybe,,", "decision 'maybe' is not accept or reject"),
        ("r1,p1,alice,reject,,minor imprecision", "decision is reject but no blocking issue is given"),
        ("r1,p1,alice,accept,task not done,", "decision is accept but a blocking issue is given"),
        ("r1,p1,alice,,,minor imprecision", "decision '' is not accept or reject"),
        ("r1,p1,alice,,task not done,", "decision '' is not accept or reject"),
        ("r1,p1,alice,accept,,,note,extra", "2 more cell(s) than the header has columns"),
    ],
)
def test_parse_each_bad_row_kind(row, expected):
    error = _problems(row)
    assert error.reason_code == "malformed_audit_sheet" and isinstance(error, ValueError)
    assert error.sheet == "round1-alice.csv"
    assert len(error.problems) == 1 and error.problems[0][0] == 2
    assert expected in error.problems[0][1]
    assert f"audit sheet round1-alice.csv: row 2: {expected}" in str(error)


def test_parse_duplicate_names_the_earlier_row():
    error = _problems("r1,p1,alice,accept,,", "r1,p2,alice,accept,,", "r2,p1,alice,accept,,", "r1,p1,alice,reject,mismatch,")
    # p1 in r2 is a different pair; only the second (r1, p1, alice) on row 5 clashes with row 2
    assert error.problems == [(5, "reviewer 'alice' already reviewed pair p1 on row 2")]


def test_parse_rows_follow_spreadsheet_rows_not_physical_lines():
    header = "audit_round,pair_id,instruction,reviewer,decision,blocking_issues,non_blocking_issues"
    text = (
        f"{header}\n"
        'r1,p1,"line one\nline two\nline three",alice,accept,,\n'  # row 2 on physical lines 2-4
        'r1,p2,"one\ntwo",alice,maybe,,\n'  # row 3 on physical lines 5-6
        "r1,p3,plain,alice,reject,,\n"  # row 4 on physical line 7
    )
    with pytest.raises(SheetError) as caught:
        parse_review_sheet(io.StringIO(text), "s.csv", SAMPLED)
    assert [row for row, _ in caught.value.problems] == [3, 4]
    assert "row 3: decision 'maybe'" in str(caught.value) and "row 4: decision is reject" in str(caught.value)
    assert "row 5" not in str(caught.value) and "row 7" not in str(caught.value)


def test_parse_lists_every_bad_row_and_reads_nothing_on_error():
    error = _problems(
        "r1,p1,alice,accept,,",  # row 2 fine
        "r1,p2,,accept,,",  # row 3
        "r1,p3,alice,Nope,,",  # row 4
        ",,,,,",  # row 5 blank
        "r1,p1,alice,accept,,",  # row 6 duplicate of row 2
        "r3,p1,bob,accept,,",  # row 7
    )
    assert [row for row, _ in error.problems] == [3, 4, 6, 7]
    message = str(error)
    for fragment in ("row 3: reviewer is empty", "row 4: decision 'Nope'", "row 6: reviewer 'alice' already reviewed pair p1 on row 2",
                     "row 7: audit_round 'r3' has not been drawn"):
        assert fragment in message


def test_parse_error_message_shows_twenty_problems_then_a_count():
    error = _problems(*[f"r1,p1,reviewer{n},maybe,," for n in range(25)])
    assert len(error.problems) == 25 and [row for row, _ in error.problems] == list(range(2, 27))
    message = str(error)
    assert "row 21:" in message and "row 22:" not in message  # rows 2..21 are the first 20
    assert message.endswith("(and 5 more)")


# --- pair_outcomes ----------------------------------------------------------------------------------------


def _review(pair_id: str, reviewer: str, accept: bool, non_blocking: tuple[str, ...] = (), audit_round: str = "r1") -> Review:
    blocking = () if accept else ("instruction-image mismatch",)
    return Review(audit_round, pair_id, reviewer, accept, blocking, non_blocking, "", 0)


def _votes(pair_id: str, decisions: str) -> list[Review]:
    return [_review(pair_id, f"rev{n}", d == "A") for n, d in enumerate(decisions)]


def test_pair_outcomes_majority_tie_rejects():
    reviews = _votes("p1", "AAARR") + _votes("p2", "AARR") + _votes("p3", "ARR") + _votes("p4", "A")
    sample = [("r1", f"p{n}", "painting") for n in range(1, 5)]
    outcomes = pair_outcomes(sample, reviews, "majority", min_reviewers=1)
    assert outcomes == [
        PairOutcome("r1", "p1", "painting", 5, 3, 2, True),  # 3/5 > half
        PairOutcome("r1", "p2", "painting", 4, 2, 2, False),  # 2/4 is a tie: rejected
        PairOutcome("r1", "p3", "painting", 3, 1, 2, False),
        PairOutcome("r1", "p4", "painting", 1, 1, 0, True),
    ]


def test_pair_outcomes_unanimous():
    reviews = _votes("p1", "AAARR") + _votes("p2", "AAA") + _votes("p3", "AAR")
    sample = [("r1", "p1", "d"), ("r1", "p2", "d"), ("r1", "p3", "d")]
    assert [o.accepted for o in pair_outcomes(sample, reviews, "unanimous", 2)] == [False, True, False]
    assert [o.n_blocking_flags for o in pair_outcomes(sample, reviews, "unanimous", 2)] == [2, 0, 1]


def test_pair_outcomes_below_min_reviewers_is_undecided():
    reviews = _votes("p1", "AA") + _votes("p2", "AAA") + _votes("p3", "R")
    sample = [("r1", "p1", "d"), ("r1", "p2", "d"), ("r1", "p3", "d"), ("r1", "p4", "d")]
    outcomes = pair_outcomes(sample, reviews, "majority", min_reviewers=3)
    assert [(o.n_reviews, o.accepted) for o in outcomes] == [(2, None), (3, True), (1, None), (0, None)]
    # min_reviewers 0 still needs one review to decide
    assert [o.accepted for o in pair_outcomes(sample, reviews, "majority", 0)] == [True, True, False, None]


def test_pair_outcomes_keeps_rounds_apart_and_rejects_unknown_rule():
    reviews = [_review("p1", "a", True), _review("p1", "a", False, audit_round="r2"), _review("p1", "b", False, audit_round="r2")]
    sample = [("r1", "p1", "d"), ("r2", "p1", "d")]
    outcomes = pair_outcomes(sample, reviews, "majority", 1)
    assert [(o.audit_round, o.n_reviews, o.n_accept, o.accepted) for o in outcomes] == [("r1", 1, 1, True), ("r2", 2, 0, False)]
    with pytest.raises(ValueError, match="'plurality'"):
        pair_outcomes(sample, reviews, "plurality", 1)


# --- audit_figures ----------------------------------------------------------------------------------------


def _round_one() -> tuple[list[tuple[str, str, str]], list[Review]]:
    sample = [
        ("r1", "pa1", "painting"), ("r1", "pa2", "painting"), ("r1", "pa3", "painting"),
        ("r1", "ph1", "photography"), ("r1", "ph2", "photography"), ("r1", "ph3", "photography"),
        ("r1", "vi1", "virtual"), ("r1", "vi2", "virtual"),
    ]
    reviews = [
        _review("pa1", "a", True, ("awkward wording",)), _review("pa1", "b", True), _review("pa1", "c", True),
        _review("pa2", "a", False), _review("pa2", "b", True), _review("pa2", "c", True),
        _review("pa3", "a", False), _review("pa3", "b", False, ("some repetition",)),
        _review("ph1", "a", True), _review("ph1", "b", True),
        _review("ph2", "a", True, ("minor imprecision",)), _review("ph2", "c", False),
        _review("ph3", "a", True, ("minor imprecision",)),  # one review: undecided, counted nowhere
        _review("vi1", "b", True), _review("vi1", "c", True),
        _review("vi2", "a", False),  # undecided
        _review("zz9", "d", True, ("not sampled",)),  # a pair outside the sample is ignored
    ]
    return sample, reviews


def _figures_by_scope(sample, reviews, rule="majority", min_reviewers=2):
    figures = audit_figures(pair_outcomes(sample, reviews, rule, min_reviewers), reviews)
    return {(f.audit_round, f.scope): f for f in figures}


def _counts(f):
    return (f.n_sampled, f.n_decided, f.n_reviews, f.n_reviewers, f.n_accepted, f.n_no_blocking, f.n_with_non_blocking,
            f.n_agreeing_reviewer_pairs, f.n_reviewer_pairs)


def test_audit_figures_overall_and_per_domain():
    sample, reviews = _round_one()
    figures = _figures_by_scope(sample, reviews)
    assert set(figures) == {("r1", ALL_SCOPE), ("r1", "painting"), ("r1", "photography"), ("r1", "virtual")}

    # painting: pa1 AAA accepted, pa2 RAA accepted (2/3), pa3 RR rejected; reviews 3+3+2 = 8 by a, b, c;
    # no blocking: pa1 only; non-blocking: pa1 (a), pa3 (b); reviewer pairs 3 (all agree) + 3 (only b-c) + 1 = 7, agreeing 5
    painting = figures[("r1", "painting")]
    assert _counts(painting) == (3, 3, 8, 3, 2, 1, 2, 5, 7)
    assert painting.acceptance_rate == pytest.approx(2 / 3)
    assert painting.no_blocking_rate == pytest.approx(1 / 3)
    assert painting.non_blocking_rate == pytest.approx(2 / 3)
    assert painting.pairwise_agreement == pytest.approx(5 / 7)

    # photography: ph1 AA accepted, ph2 AR a tie so rejected, ph3 undecided; reviews 2+2 by a, b, c;
    # no blocking: ph1; non-blocking: ph2 (ph3's is not counted); pairs 1 agreeing + 1 disagreeing
    photography = figures[("r1", "photography")]
    assert _counts(photography) == (3, 2, 4, 3, 1, 1, 1, 1, 2)
    assert (photography.acceptance_rate, photography.no_blocking_rate, photography.non_blocking_rate) == (0.5, 0.5, 0.5)
    assert photography.pairwise_agreement == 0.5

    # virtual: vi1 AA accepted by b, c; vi2 undecided, so its reviewer a is not counted
    virtual = figures[("r1", "virtual")]
    assert _counts(virtual) == (2, 1, 2, 2, 1, 1, 0, 1, 1)
    assert (virtual.acceptance_rate, virtual.no_blocking_rate, virtual.non_blocking_rate, virtual.pairwise_agreement) == (
        1.0, 1.0, 0.0, 1.0)

    # all: 8 sampled, 6 decided, 8+4+2 = 14 reviews, accepted 2+1+1 = 4, no blocking 1+1+1 = 3,
    # non-blocking 2+1+0 = 3, agreeing 5+1+1 = 7 of 7+2+1 = 10 reviewer pairs
    overall = figures[("r1", ALL_SCOPE)]
    assert _counts(overall) == (8, 6, 14, 3, 4, 3, 3, 7, 10)
    assert overall.acceptance_rate == pytest.approx(4 / 6)
    assert (overall.no_blocking_rate, overall.non_blocking_rate, overall.pairwise_agreement) == (0.5, 0.5, 0.7)


def test_audit_figures_unanimous_rule_only_moves_acceptance():
    sample, reviews = _round_one()
    figures = _figures_by_scope(sample, reviews, rule="unanimous")
    # pa2 (one reject of three) now fails: painting 1 of 3, all 3 of 6 (pa1, ph1, vi1)
    assert figures[("r1", "painting")].n_accepted == 1
    assert figures[("r1", ALL_SCOPE)].acceptance_rate == 0.5
    # under unanimity acceptance equals the no-blocking share
    assert all(f.acceptance_rate == f.no_blocking_rate for f in figures.values())
    assert figures[("r1", ALL_SCOPE)].pairwise_agreement == 0.7


def test_audit_figures_nothing_decided_gives_no_rates():
    sample = [("r1", "p1", "painting"), ("r1", "p2", "painting")]
    reviews = [_review("p1", "a", True, ("minor imprecision",))]
    (overall, painting) = audit_figures(pair_outcomes(sample, reviews, "majority", 2), reviews)
    for f in (overall, painting):
        assert _counts(f) == (2, 0, 0, 0, 0, 0, 0, 0, 0)
        assert (f.acceptance_rate, f.no_blocking_rate, f.non_blocking_rate, f.pairwise_agreement) == (None, None, None, None)
    # one reviewer per pair: decided, but no reviewer pair to agree or disagree
    (overall, _) = audit_figures(pair_outcomes(sample, reviews, "majority", 1), reviews)
    assert (overall.n_decided, overall.acceptance_rate, overall.pairwise_agreement) == (1, 1.0, None)
    assert audit_figures([], reviews) == []


def test_audit_figures_rounds_are_reported_separately():
    sample, reviews = _round_one()
    sample += [("r2", "pa1", "painting"), ("r2", "vi9", "virtual")]
    reviews += [_review("pa1", "a", False, audit_round="r2"), _review("pa1", "d", False, audit_round="r2"),
                _review("vi9", "d", True, audit_round="r2"), _review("vi9", "e", False, audit_round="r2")]
    figures = audit_figures(pair_outcomes(sample, reviews, "majority", 2), reviews)
    # sorted by round, then scope ("all" sorts before the domain names here)
    assert [(f.audit_round, f.scope) for f in figures] == [
        ("r1", "all"), ("r1", "painting"), ("r1", "photography"), ("r1", "virtual"),
        ("r2", "all"), ("r2", "painting"), ("r2", "virtual"),
    ]
    by_scope = {(f.audit_round, f.scope): f for f in figures}
    assert _counts(by_scope[("r1", ALL_SCOPE)]) == (8, 6, 14, 3, 4, 3, 3, 7, 10)  # unchanged by round r2
    # r2: pa1 RR rejected (agree), vi9 AR tie rejected (disagree); reviewers a, d, e
    assert _counts(by_scope[("r2", ALL_SCOPE)]) == (2, 2, 4, 3, 0, 0, 0, 1, 2)
    assert _counts(by_scope[("r2", "painting")]) == (1, 1, 2, 2, 0, 0, 0, 1, 1)
    assert by_scope[("r2", "virtual")].pairwise_agreement == 0.0


def test_sheet_to_figures_end_to_end():
    sheet = _sheet(
        "r1,p1,alice,accept,,awkward wording",
        "r1,p1,bob,accept,,",
        "r1,p2,alice,reject,task not done,",
        "r1,p2,bob,accept,,some repetition",
        "r1,p3,alice,,,",
    )
    reviews, blank = parse_review_sheet(sheet, "s.csv", SAMPLED)
    sample = [("r1", "p1", "painting"), ("r1", "p2", "virtual"), ("r1", "p3", "virtual")]
    overall = audit_figures(pair_outcomes(sample, reviews, "majority", 2), reviews)[0]
    # p1 accepted (2/2), p2 a 1/2 tie so rejected, p3 blank and undecided; p1 and p2 both carry a non-blocking issue
    assert blank == 1 and overall.scope == ALL_SCOPE
    assert _counts(overall) == (3, 2, 4, 2, 1, 1, 2, 1, 2)


def test_parse_empty_line_keeps_spreadsheet_row_numbers():
    # a spreadsheet opening this file shows the empty line as row 2, so the bad decision is on row 3
    with pytest.raises(SheetError) as caught:
        parse_review_sheet(io.StringIO(f"{HEADER}\n\nr1,p1,alice,maybe,,\n"), "s.csv", SAMPLED)
    assert caught.value.problems[0][0] == 3
