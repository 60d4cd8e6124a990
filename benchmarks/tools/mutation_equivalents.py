"""Survivors of `mutation.py` judged equivalent: no input can tell them from the original.

Each entry: module path (under retrieval_gate/), function, the site's source line (stripped),
the original and the mutated text as `mutation.py` prints them, and why. Named by text, not
line number, so that edits elsewhere in a module keep them; an entry whose code changed no
longer matches, and its mutant is counted again until a person judges it anew.
"""

from __future__ import annotations

EQUIVALENTS: list[tuple[str, str, str, str, str, str]] = [
    # judging/
    (
        "judging/pool.py",
        "calibration_sample",
        "if size is None or size >= len(ids):",
        "size >= len(ids)",
        "size > len(ids)",
        "at size == len(ids) the sample is every id, and sorted it is the sorted ids returned "
        "by the branch not taken",
    ),
    *(
        (
            "judging/synthesis.py",
            "clean_query",
            'text = _LABEL.sub("", line, count=1).strip()',
            "_LABEL.sub('', line, count=1)",
            f"_LABEL.sub('', line, count={count})",
            "_LABEL starts with ^ (no MULTILINE): it matches at the start of the line only, so "
            "it is replaced once whatever the count",
        )
        for count in (0, 2)
    ),
    *(
        (
            "judging/synthesis.py",
            "clean_query",
            "while len(text) >= 2 and text[0] in _QUOTES and text[-1] in _QUOTES:",
            "len(text) >= 2",
            bound,
            "the bound only matters for a text of 1 or 2 characters that starts and ends with "
            "a quote: it is all quotes, so stripped ('') or not it has no letter and is refused",
        )
        for bound in ("len(text) > 2", "len(text) >= 3", "len(text) >= 1")
    ),
    (
        "judging/synthesis.py",
        "stratified_order",
        "if taken[name] < size:",
        "taken[name] < size",
        "taken[name] <= size",
        "a used-up stratum pushed back is never taken: its taken + 1 = size + 1 is past its "
        "upper quota ceil(place * size / total) <= size, so it is skipped and pushed back",
    ),
    *(
        (
            "judging/synthesis.py",
            "_jaccard",
            "return len(a & b) / union if union else 1.0",
            "len(a & b) / union if union else 1.0",
            f"len(a & b) / union if union else {value}",
            "near() compares a query only with kept ones sharing a word with it (candidates), "
            "so the union is never empty",
        )
        for value in ("0.0", "2.0")
    ),
    *(
        (
            "judging/probes.py",
            "stuffed_passage",
            "body = passage[: max(1, MAX_PASSAGE // 2)]",
            "max(1, MAX_PASSAGE // 2)",
            f"max({low}, MAX_PASSAGE // 2)",
            "MAX_PASSAGE // 2 is 3000: the max is 3000 whatever the lower bound",
        )
        for low in (0, 2)
    ),
    *(
        (
            "judging/probes.py",
            "stuffed_passage",
            'stuffing = (words + " ") * (room // (len(words) + 1) + 1)',
            original,
            mutated,
            "more repetitions of the words (len(words) >= 1): the stuffing is still at least "
            "`room` long, and it is cut to `room` characters",
        )
        for original, mutated in (
            ("room // (len(words) + 1) + 1", "room // (len(words) + 1) + 2"),
            ("len(words) + 1", "len(words) + 0"),
        )
    ),
    (
        "judging/client.py",
        "ChatClient.__init__",
        "connections = max(config.concurrency, 1)",
        "max(config.concurrency, 1)",
        "max(config.concurrency, 0)",
        "judge.concurrency is validated to be at least 1 (JudgeConfig)",
    ),
    *(
        (
            "judging/client.py",
            "_count",
            "return value if isinstance(value, int) and not isinstance(value, bool) and value "
            ">= 0 else 0",
            "value >= 0",
            mutated,
            "a count of 0 is returned as 0 by either branch",
        )
        for mutated in ("value > 0", "value >= 1")
    ),
    (
        "judging/client.py",
        "_first_token",
        "if not 0.0 <= probability <= 1.0 + 1e-9:",
        "0.0 <= probability <= 1.0 + 1e-09",
        "-1.0 <= probability <= 1.0 + 1e-09",
        "the probability is an exp(), never below 0 (NaN fails both)",
    ),
    (
        "judging/calls.py",
        "ask_all",
        "result = run_queries(asker, queries, 1, settings_of(client.config), progress=progress)",
        "run_queries(asker, queries, 1, settings_of(client.config), progress=progress)",
        "run_queries(asker, queries, 2, settings_of(client.config), progress=progress)",
        "no cache is given, and the asker ignores k and returns no hits: k only cuts hits "
        "and keys the cache",
    ),
    # gate/power/
    *(
        (
            "gate/power/assisted_view.py",
            "power_view",
            "share = (rows.size - ours.size) / rows.size if rows.size else 0.0",
            "(rows.size - ours.size) / rows.size if rows.size else 0.0",
            f"(rows.size - ours.size) / rows.size if rows.size else {other}",
            "an empty slice has no human-judged query, so rho stays 0.0 and rho * rho * share "
            "is 0 whatever the share: the factor is 1",
        )
        for other in ("-1.0", "1.0")
    ),
    (
        "gate/power/assisted_view.py",
        "power_view",
        "factors[c.metric, c.slice] = float(np.sqrt(max(0.0, 1.0 - rho * rho * share)))",
        "max(0.0, 1.0 - rho * rho * share)",
        "max(-1.0, 1.0 - rho * rho * share)",
        "np.corrcoef clips rho to [-1, 1] and share is in [0, 1]: a rounded product of numbers "
        "at most 1 is at most 1, so 1.0 - rho * rho * share is never below 0 and both maxes "
        "return it",
    ),
    (
        "gate/power/spread.py",
        "concentrated_chance",
        "return 0.0",
        "0.0",
        "-0.0",
        "-0.0 equals 0.0: the chance is only compared with the power (concentrated_drop), "
        "never printed",
    ),
    (
        "gate/modes/assisted.py",
        "_estimates",
        "estimate=0.0, se=0.0, lam=0.0, n=0, unlabelled=int(theirs.size), df=1.0",
        "PpiEstimate(estimate=0.0, se=0.0, lam=0.0, n=0, unlabelled=int(theirs.size), df=1.0)",
        "PpiEstimate(estimate=0.0, se=0.0, lam=0.0, n=0, unlabelled=int(theirs.size), df=2.0)",
        "an estimate of no labelled query never reads its df: interval() and the "
        "p-values return before it below n 2, and such a check is never in the family",
    ),
    *(
        (
            "gate/modes/assisted.py",
            "_estimates",
            "estimate=0.0, se=0.0, lam=0.0, n=0, unlabelled=int(theirs.size), df=1.0",
            "PpiEstimate(estimate=0.0, se=0.0, lam=0.0, n=0, unlabelled=int(theirs.size), df=1.0)",
            f"PpiEstimate(estimate=0.0, se={se}, lam=0.0, n=0, unlabelled=int(theirs.size), "
            "df=1.0)",
            "an estimate of no labelled query never reads its se: interval() and the p-values "
            "return before it below n 2, the detectable drop needs n 2, and the comparison "
            "does not carry it",
        )
        for se in ("-1.0", "1.0")
    ),
    *(
        (
            "gate/modes/assisted.py",
            "_comparison",
            "if gated and max_drop is not None and n >= 2 and delta.se > 0:",
            "n >= 2",
            mutated,
            "a gated check has at least MIN_HUMAN (10) human-judged queries (assisted_comparisons "
            "gives any with fewer a reason), so n >= 1, >= 2 and > 2 all hold where it is read",
        )
        for mutated in ("n > 2", "n >= 1")
    ),
    (
        "gate/modes/label_free.py",
        "overlap_columns",
        "own = reference[1 : n + 1] if len(reference) > 1 else reference[:1]",
        ":1",
        ":2",
        "the else branch is taken only with at most one reference run, where the slices "
        ":1 and :2 are the same list",
    ),
    (
        "gate/modes/assisted_holes.py",
        "_max_drops",
        "if low < 0 < high:",
        "low < 0 < high",
        "low <= 0 < high",
        "at low == 0 the end appended, threshold.resolve(0.0), is "
        "threshold.resolve(low), already in the list: min and max stay",
    ),
    (
        "gate/modes/assisted_holes.py",
        "_smallest_p",
        "judge_part = big_n >= 2 and lam > 0",
        "big_n >= 2",
        "big_n >= 1",
        "at one judge-only query its sd and spread are 0 (_sd, _spread), so the "
        "variance gains 0 and the degrees of freedom n + 1 - 2 are the n - 1 of the "
        "other branch",
    ),
    (
        "gate/modes/assisted.py",
        "_comparison",
        "if gated and max_drop is not None and n >= 2 and delta.se > 0:",
        "delta.se > 0",
        "delta.se >= 0",
        "at se 0 (or NaN) detectable_drop is given sd 0 and returns None, as the branch "
        "not taken leaves it",
    ),
    (
        "gate/modes/assisted.py",
        "_comparison",
        "if gated and max_drop is not None and n >= 2 and delta.se > 0:",
        "delta.se > 0",
        "delta.se > -1",
        "a standard error is never below 0, and at 0 (or NaN) detectable_drop is given "
        "sd 0 and returns None, as the branch not taken leaves it",
    ),
    (
        "gate/modes/assisted.py",
        "_comparison",
        "if gated and max_drop is not None and n >= 2 and delta.se > 0:",
        "n >= 2",
        "n >= 3",
        "a gated check has at least MIN_HUMAN (10) human-judged queries "
        "(assisted_comparisons gives any with fewer a reason), so n is never 2 where "
        "gated holds",
    ),
    (
        "gate/modes/assisted_holes.py",
        "<module>",
        "FREE_AT_MOST = 12",
        "FREE_AT_MOST = 12",
        "FREE_AT_MOST = 13",
        "a cost limit: past it the Minkowski bound stands in, above the corners' maximum, "
        "and tests/gate/modes/test_assisted_holes.py holds both to every grading",
    ),
    (
        "metrics/ranking.py",
        "_mapping_rows.docs",
        'slots = np.searchsorted(starts, rows, side="right") - 1',
        "np.searchsorted(starts, rows, side='right') - 1",
        "np.searchsorted(starts, rows, side='right') - 2",
        "slots only feed np.diff, which a constant shift does not change",
    ),
    (
        "metrics/ranking.py",
        "_run_rows",
        "if len(unlabelled):",
        "len(unlabelled)",
        "not len(unlabelled)",
        "both ways rank the labelled rows alike: the branch only picks the cheaper one",
    ),
    (
        "metrics/ranking.py",
        "ranking_order",
        "group = np.cumsum((rows == 0) | ~tied[np.maximum(rows - 1, 0)]) - 1",
        "np.maximum(rows - 1, 0)",
        "np.maximum(rows - 1, -1)",
        "the value read at row 0 is or-ed with rows == 0, which is true there",
    ),
    (
        "metrics/measures.py",
        "_ideal_dcg",
        "judged = ranked.qrels_grade >= 0",
        "ranked.qrels_grade >= 0",
        "ranked.qrels_grade >= -1",
        "a grade below 0 gains 0 (gains lists grades >= 0 only) and gain 0 is dropped next",
    ),
    (
        "gate/checks/compare.py",
        "_paired_t",
        "whole = max(1, int(df))",
        "max(1, int(df))",
        "max(0, int(df))",
        "Welch-Satterthwaite's df is at least min(n - 1, run df) >= 1 (to the last bit)",
    ),
    (
        "gate/checks/compare.py",
        "compare",
        "total = next(iter(arrays.values()))[0].size if arrays else 0",
        "next(iter(arrays.values()))[0]",
        "next(iter(arrays.values()))[1]",
        "_check_inputs has made both sides the same length",
    ),
    (
        "gate/checks/verdicts.py",
        "verdict_of",
        "drop_evidence=drop and n > 0,",
        "n > 0",
        "n >= 0",
        "with no queries the verdict is replaced by pass (or None) a few lines below",
    ),
    (
        "gate/checks/verdicts.py",
        "verdict_of",
        "drop_evidence=drop and n > 0,",
        "n > 0",
        "n > -1",
        "with no queries the verdict is replaced by pass (or None) a few lines below",
    ),
    (
        "gate/checks/verdicts.py",
        "verdict_of",
        "rise_evidence=rise and n > 0,",
        "n > 0",
        "n >= 0",
        "with no queries the verdict is replaced by pass (or None) a few lines below",
    ),
    (
        "gate/checks/verdicts.py",
        "verdict_of",
        "rise_evidence=rise and n > 0,",
        "n > 0",
        "n > -1",
        "with no queries the verdict is replaced by pass (or None) a few lines below",
    ),
    (
        "gate/checks/verdicts.py",
        "verdict_of",
        "lean=lean and n > 0,",
        "n > 0",
        "n >= 0",
        "with no queries the verdict is replaced by pass (or None) a few lines below",
    ),
    (
        "gate/checks/verdicts.py",
        "verdict_of",
        "lean=lean and n > 0,",
        "n > 0",
        "n > -1",
        "with no queries the verdict is replaced by pass (or None) a few lines below",
    ),
    (
        "gate/checks/undefined.py",
        "defined_rows",
        "return rows",
        "rows",
        "-rows",
        "taken only when rows is empty: minus an empty int64 array is the same empty array",
    ),
    (
        "gate/modes/assisted_units.py",
        "units_of",
        "people[ours], machine[ours], check.max_drop if check.max_drop else 0.0",
        "check.max_drop if check.max_drop else 0.0",
        "check.max_drop if check.max_drop else -1.0",
        "sign_agreement counts a delta decisive when |delta| >= the threshold: at 0 and at -1"
        " alike every delta (a NaN at neither)",
    ),
    (
        "gate/modes/sequential.py",
        "Monitor.due",
        "return 0.0",
        "0.0",
        "-0.0",
        "-0.0 equals 0.0: look() only asks whether it is <= 0.0, and tests compare it with ==",
    ),
    (
        "stats/significance.py",
        "_monte_carlo",
        "most = max(1, min(_BLOCK_BYTES // max((n + 7) // 8, 1), _CHUNK_CELLS // columns))",
        "(n + 7) // 8",
        "(n + 7) * 8",
        "bounds how many draws are summed at once (memory); the stream and p stay the same",
    ),
    (
        "stats/significance.py",
        "noisy_sign_flip",
        "drop=np.minimum(drop, 1.0), rise=np.minimum(rise, 1.0), "
        "bound=np.zeros(columns, dtype=bool)",
        "np.minimum(rise, 1.0)",
        "np.minimum(rise, 2.0)",
        "a mean of t_cdf values clipped to [0, 1] is never above 1 (rounding is monotone)",
    ),
    (
        "stats/significance.py",
        "noisy_sign_flip",
        "drop=np.minimum(drop, 1.0), rise=np.minimum(rise, 1.0), "
        "bound=np.zeros(columns, dtype=bool)",
        "np.minimum(drop, 1.0)",
        "np.minimum(drop, 2.0)",
        "a mean of t_cdf values clipped to [0, 1] is never above 1 (rounding is monotone)",
    ),
    (
        "gate/baseline/document.py",
        "from_document",
        'age = "newer" if version > SCHEMA_VERSION else "older"',
        "version > SCHEMA_VERSION",
        "version >= SCHEMA_VERSION",
        "only reached when version != SCHEMA_VERSION",
    ),
    (
        "stats/detectability.py",
        "critical_t",
        "if n < 63 and (1 << n) <= resamples:",
        "n < 63",
        "n <= 63",
        "at 63 queries either branch gives inf unless level >= 2^-63, where both use z",
    ),
    (
        "stats/detectability.py",
        "queries_needed",
        "low, high = 1, _MAX_QUERIES",
        "(1, _MAX_QUERIES)",
        "(0, _MAX_QUERIES)",
        "enough(0) is False (detectable_drop is None below 1 query): the search ends the same",
    ),
    (
        "gate/checks/slicing.py",
        "_grouped",
        "rows = len(columns[0]) if columns else 0",
        "len(columns[0]) if columns else 0",
        "len(columns[0]) if columns else -1",
        "a group has at least one field (_groups refuses an empty combination)",
    ),
    (
        "gate/checks/slicing.py",
        "_grouped",
        "rows = len(columns[0]) if columns else 0",
        "len(columns[0]) if columns else 0",
        "len(columns[0]) if columns else 1",
        "a group has at least one field (_groups refuses an empty combination)",
    ),
    (
        "gate/checks/slicing.py",
        "_grouped",
        "firsts = [list(map(operator.itemgetter(0), column)) for column in columns]",
        "operator.itemgetter(0)",
        "operator.itemgetter(-1)",
        "on this path every cell holds exactly one label",
    ),
    (
        "gate/baseline/side_file.py",
        "_plain_rows",
        "if not set(map(type, itertools.chain.from_iterable(lists))) <= {str}:",
        "set(map(type, itertools.chain.from_iterable(lists))) <= {str}",
        "set(map(type, itertools.chain.from_iterable(lists))) < {str}",
        "a fast path: the rows it declines are read one by one to the same result",
    ),
    (
        "metrics/ranking.py",
        "_mapping_rows.docs",
        'slots = np.searchsorted(starts, rows, side="right") - 1',
        "np.searchsorted(starts, rows, side='right') - 1",
        "np.searchsorted(starts, rows, side='right') - 0",
        "slots only feed np.diff, which a constant shift does not change",
    ),
    (
        "metrics/ranking.py",
        "ranking_order",
        "descending = len(distinct) - 1 - inverse.reshape(-1)",
        "-1",
        "-2",
        "numpy (2.x) takes any negative size in reshape as the one to infer",
    ),
    (
        "metrics/ranking.py",
        "_ideal_grades",
        "positive = qrels.grade > 0",
        "qrels.grade > 0",
        "qrels.grade >= 0",
        "grade 0 gains 0, sorts after every positive grade and only pads the ideal rows",
    ),
    (
        "stats/significance.py",
        "sign_flip",
        "if m < 63 and (1 << m) <= resamples:",
        "m < 63",
        "m <= 63",
        "enumerating 63 queries needs resamples >= 2^63: either way it never ends",
    ),
    (
        "stats/significance.py",
        "_monte_carlo",
        "most = max(1, min(_BLOCK_BYTES // max((n + 7) // 8, 1), _CHUNK_CELLS // columns))",
        "n + 7",
        "n + 6",
        "bounds how many draws are summed at once (memory); the stream and p stay the same",
    ),
    (
        "stats/significance.py",
        "t_quantile",
        "for _ in range(200):",
        "range(200)",
        "range(201)",
        "the bisection meets its 1e-12 tolerance in about 80 steps and stops",
    ),
    (
        "stats/detectability.py",
        "critical_t",
        "if n < 63 and (1 << n) <= resamples:",
        "n < 63",
        "n < 64",
        "at 63 queries either branch gives inf unless level >= 2^-63, where both use z",
    ),
    (
        "stats/detectability.py",
        "queries_needed",
        "if not max_drop > 0 or not sd > 0:",
        "not max_drop > 0 or not sd > 0",
        "not max_drop > 0 and (not sd > 0)",
        "with sd 0 detectable_drop is None, with max_drop <= 0 it never reaches the goal: None",
    ),
    (
        "gate/checks/slicing.py",
        "slice_queries",
        "slices[name] = parts[0] if len(parts) == 1 else np.unique(np.concatenate(parts))",
        "len(parts) == 1",
        "not len(parts) == 1",
        "one part is sorted and unique already: np.unique gives it back",
    ),
    (
        "gate/checks/slicing.py",
        "slice_queries",
        "slices[name] = parts[0] if len(parts) == 1 else np.unique(np.concatenate(parts))",
        "len(parts) == 1",
        "len(parts) == 0",
        "one part is sorted and unique already: np.unique gives it back",
    ),
    (
        "gate/checks/slicing.py",
        "_grouped",
        "rows = len(columns[0]) if columns else 0",
        "columns[0]",
        "columns[-1]",
        "every column holds one cell per query",
    ),
    (
        "gate/explain/label_holes.py",
        "_ap_values",
        "num_rel = (people[:, None] + np.count_nonzero(assigned >= rel, axis=1)).reshape(-1)",
        "-1",
        "-2",
        "numpy (2.x) takes any negative size in reshape as the one to infer",
    ),
    (
        "gate/checks/operational.py",
        "operational_columns",
        "before[metric] = np.where(both, ref, 0.0)",
        "np.where(both, ref, 0.0)",
        "np.where(both, ref, 1.0)",
        "an unmeasured pair's stand-in is never read: every check's rows are cut to the "
        "measured pairs (Measured.rows)",
    ),
    (
        "gate/checks/operational.py",
        "operational_columns",
        "before[metric] = np.where(both, ref, 0.0)",
        "np.where(both, ref, 0.0)",
        "np.where(both, ref, -1.0)",
        "an unmeasured pair's stand-in is never read: every check's rows are cut to the "
        "measured pairs (Measured.rows)",
    ),
    (
        "gate/checks/operational.py",
        "operational_columns",
        "after[metric] = np.where(both, cur, 0.0)",
        "np.where(both, cur, 0.0)",
        "np.where(both, cur, 1.0)",
        "an unmeasured pair's stand-in is never read: every check's rows are cut to the "
        "measured pairs (Measured.rows)",
    ),
    (
        "gate/checks/operational.py",
        "operational_columns",
        "after[metric] = np.where(both, cur, 0.0)",
        "np.where(both, cur, 0.0)",
        "np.where(both, cur, -1.0)",
        "an unmeasured pair's stand-in is never read: every check's rows are cut to the "
        "measured pairs (Measured.rows)",
    ),
    (
        "gate/checks/operational.py",
        "filled_runs",
        "np.isnan(run[metric]), np.nan_to_num(means[metric], nan=0.0), run[metric]",
        "np.nan_to_num(means[metric], nan=0.0)",
        "np.nan_to_num(means[metric], nan=1.0)",
        "a mean is NaN only where no run measured the query, a pair Measured.both leaves "
        "out of every check and so of the run noise too",
    ),
    (
        "gate/checks/operational.py",
        "filled_runs",
        "np.isnan(run[metric]), np.nan_to_num(means[metric], nan=0.0), run[metric]",
        "np.nan_to_num(means[metric], nan=0.0)",
        "np.nan_to_num(means[metric], nan=-1.0)",
        "a mean is NaN only where no run measured the query, a pair Measured.both leaves "
        "out of every check and so of the run noise too",
    ),
    (
        "gate/checks/operational.py",
        "operational_columns",
        "turns = np.asarray([latency.turns.get(q, -1) for q in query_ids], dtype=np.int64)",
        "-1",
        "-2",
        "turns count from 0 (position // size): -1 and -2 alike put the turnless queries in "
        "one block of their own",
    ),
    (
        "gate/checks/verdicts.py",
        "verdict_of",
        "shown_within = None if shown_within is None else True",
        "shown_within is None",
        "not shown_within is None",
        "without require_significance the drop evidence is shown too: a check past max_drop "
        "has regressed before within is read, so True and None lead to one verdict",
    ),
    (
        "gate/checks/verdicts.py",
        "verdict_of",
        "lean=lean and n > 0,",
        "n > 0",
        "n > 1",
        "a one-query check's p-value is never within LEAN x alpha: one sign flip or swap "
        "gives about 1/2, the t-test and PPI 1; without require_significance it has "
        "regressed before the lean is read",
    ),
    (
        "gate/explain/label_holes.py",
        "<module>",
        "_ENUMERATED_CELLS = 1 << 20",
        "1 << 20",
        "1 << 19",
        "bounds how many assignments are scored at once (memory); each is scored alike",
    ),
    (
        "gate/explain/label_holes.py",
        "_decided",
        "after = scores[1][metric]",
        "scores[1]",
        "scores[0]",
        "read only for the metrics kept as measured (outside the family, unbounded), whose "
        "re-decided checks are never read back and share no alpha",
    ),
    (
        "stats/quantile_tests.py",
        "<module>",
        "_CHUNK_CELLS = 500_000",
        "_CHUNK_CELLS = 500000",
        "_CHUNK_CELLS = 500001",
        "the chunks draw the same stream in the same order: memory only, the p-values stay",
    ),
    (
        "stats/quantile_tests.py",
        "quantile_change",
        "step = max(1, _CHUNK_CELLS // n)",
        "_CHUNK_CELLS // n",
        "_CHUNK_CELLS * n",
        "the chunks draw the same stream in the same order: memory only, the p-values stay",
    ),
    (
        "stats/agreement.py",
        "_kappa_weights",
        "return 1.0 - np.eye(k)",
        "1.0 - np.eye(k)",
        "-(1.0 - np.eye(k))",
        "kappa is 1 - n * sum(w * observed) / sum(w * chance): a sign on every weight "
        "cancels exactly, and -0.0 == 0.0 keeps the undefined case",
    ),
    (
        "stats/agreement.py",
        "_kappa_weights",
        "return np.abs(steps)",
        "np.abs(steps)",
        "-np.abs(steps)",
        "kappa is 1 - n * sum(w * observed) / sum(w * chance): a sign on every weight "
        "cancels exactly, and -0.0 == 0.0 keeps the undefined case",
    ),
    (
        "stats/agreement.py",
        "_kappa_weights",
        "return np.square(steps)",
        "np.square(steps)",
        "-np.square(steps)",
        "kappa is 1 - n * sum(w * observed) / sum(w * chance): a sign on every weight "
        "cancels exactly, and -0.0 == 0.0 keeps the undefined case",
    ),
    (
        "stats/agreement.py",
        "_alpha_distances",
        "return 1.0 - np.eye(len(scale))",
        "1.0 - np.eye(len(scale))",
        "-(1.0 - np.eye(len(scale)))",
        "alpha is 1 - (n - 1) * sum(coincidence * d) / sum(expected * d): a sign on every "
        "distance cancels exactly, and -0.0 == 0.0 keeps the NaN case",
    ),
    (
        "stats/agreement.py",
        "_alpha_distances",
        "return np.square(np.subtract.outer(scale, scale))",
        "np.square(np.subtract.outer(scale, scale))",
        "-np.square(np.subtract.outer(scale, scale))",
        "alpha is 1 - (n - 1) * sum(coincidence * d) / sum(expected * d): a sign on every "
        "distance cancels exactly, and -0.0 == 0.0 keeps the NaN case",
    ),
    (
        "stats/agreement.py",
        "_alpha_distances",
        "return np.square(between - ends / 2)",
        "np.square(between - ends / 2)",
        "-np.square(between - ends / 2)",
        "alpha is 1 - (n - 1) * sum(coincidence * d) / sum(expected * d): a sign on every "
        "distance cancels exactly, and -0.0 == 0.0 keeps the NaN case",
    ),
    (
        "stats/agreement.py",
        "annotator_agreement",
        "_, item = np.unique(query_code * max(len(doc_ids), 1) + doc, return_inverse=True)",
        "query_code * max(len(doc_ids), 1) + doc",
        "query_code * max(len(doc_ids), 1) - doc",
        "doc is in [0, len(doc_ids)), so q * len - doc is still one code per (query, doc); "
        "only the items' order changes, and neither kappa nor alpha depends on it",
    ),
    (
        "stats/quantile_tests.py",
        "quantile_change",
        "turn = np.unique(given[both], return_inverse=True)[1].reshape(-1)",
        "-1",
        "-2",
        "numpy's reshape infers the size of any negative dimension, not only -1: the same "
        "1-d array (a future numpy that refuses -2 would kill it)",
    ),
    (
        "stats/quantile_tests.py",
        "quantile_change",
        "scale = max(float(np.abs(ref).max()), float(np.abs(cur).max()), 1e-300)",
        "max(float(np.abs(ref).max()), float(np.abs(cur).max()), 1e-300)",
        "max(float(np.abs(ref).max()), float(np.abs(cur).max()), -1.0)",
        "the floor binds only when every value is 0, where every draw and the observed change "
        "are exactly 0: a tolerance of 0 or of 1e-312 counts the same ties",
    ),
    (
        "stats/significance.py",
        "_monte_carlo",
        "most = max(1, min(_BLOCK_BYTES // max((n + 7) // 8, 1), _CHUNK_CELLS // columns))",
        "n + 7",
        "n - 7",
        "bounds how many draws are summed at once (memory); the stream and p stay the same",
    ),
    (
        "stats/significance.py",
        "_monte_carlo",
        "most = max(1, min(_BLOCK_BYTES // max((n + 7) // 8, 1), _CHUNK_CELLS // columns))",
        "n + 7",
        "n + 8",
        "bounds how many draws are summed at once (memory); the stream and p stay the same",
    ),
    (
        "stats/significance.py",
        "_monte_carlo",
        "most = max(1, min(_BLOCK_BYTES // max((n + 7) // 8, 1), _CHUNK_CELLS // columns))",
        "(n + 7) // 8",
        "(n + 7) // 9",
        "bounds how many draws are summed at once (memory); the stream and p stay the same",
    ),
    (
        "stats/significance.py",
        "_monte_carlo",
        "most = max(1, min(_BLOCK_BYTES // max((n + 7) // 8, 1), _CHUNK_CELLS // columns))",
        "(n + 7) // 8",
        "(n + 7) // 7",
        "bounds how many draws are summed at once (memory); the stream and p stay the same",
    ),
    (
        "stats/significance.py",
        "noisy_sign_flip",
        "cap = max(1, _CHUNK_CELLS // max(n, 1))",
        "max(n, 1)",
        "max(n, 0)",
        "with no query every column has m = 0 and 1 << 0 <= resamples: it is enumerated, "
        "so the sampled branch sees n 0 only at resamples < 1, which sign_flip refuses",
    ),
    (
        "stats/saddlepoint.py",
        "_whole_multiples",
        "return bool(np.all(np.abs(ratio - np.round(ratio)) <= 1e-9 * np.maximum(ratio, 1.0)))",
        "np.maximum(ratio, 1.0)",
        "np.maximum(ratio, 0.0)",
        "no ratio is below 1: span is the smallest value over a whole number of steps, so"
        " every value over it is at least smallest / span, steps (rounded), and 1 exactly"
        " at one step",
    ),
    (
        "stats/saddlepoint.py",
        "_exact_saddle",
        "t[j : j + 1] = _root(d, s[j : j + 1], columns.powers[0, j : j + 1])",
        "j + 1",
        "j + 2",
        "of the three j + 1 (one key), that of t's slice: the root also lands in t[j + "
        "1], which the next column's own root then overwrites, and the last column's "
        "slice ends at the end; the other two give _root two targets for one column "
        "(killed)",
    ),
    (
        "stats/calibration.py",
        "kendall_tau_b",
        "first, second = np.triu_indices(a.size, k=1)",
        "np.triu_indices(a.size, k=1)",
        "np.triu_indices(a.size, k=0)",
        "the diagonal adds only pairs (i, i), whose signs are 0 in both rankings: they "
        "add 0 to the score and nothing to either count of untied pairs",
    ),
    (
        "stats/saddlepoint.py",
        "_span",
        "return 0.0",
        "0.0",
        "-0.0",
        "the span is only subtracted from a positive sum and doubled into a step added to"
        " one: -0.0 and 0.0 give the same floats there",
    ),
    (
        "gate/checks/family.py",
        "blind_reason",
        "if member.max_drop is None or member.baseline_mean is None or not (member.sd or 0) > 0:",
        "member.sd or 0",
        "member.sd or -1",
        "the right side is taken only for an sd of None or 0, and 0 > 0 and -1 > 0 are both false",
    ),
    (
        "gate/checks/family.py",
        "blind_reason",
        "sd=float(member.sd or 0),",
        "member.sd or 0",
        "member.sd or -1",
        "reached only once the line above found member.sd above 0, so the or never takes "
        "its right side",
    ),
    (
        "stats/significance.py",
        "_monte_carlo",
        "most = max(1, min(_BLOCK_BYTES // max((n + 7) // 8, 1), _CHUNK_CELLS // columns))",
        "max((n + 7) // 8, 1)",
        "max((n + 7) // 8, 0)",
        "a sampled column has a non-zero difference, so n >= 1 and (n + 7) // 8 >= 1: the"
        " floor never binds",
    ),
    (
        "stats/significance.py",
        "_draw_sizes",
        "cap = max(1, _CHUNK_CELLS // max(n, 1))",
        "max(n, 1)",
        "max(n, 2)",
        "the caps differ only at n = 1, a single query, which is enumerated unless "
        "resamples is 1, and then every call is of one row whichever the cap",
    ),
    (
        "stats/saddlepoint.py",
        "_Columns.of",
        "whole = count if not d.flags.f_contiguous else 1",
        "count if not d.flags.f_contiguous else 1",
        "count if not d.flags.f_contiguous else 2",
        "a Fortran-ordered matrix's columns sum to the same floats one, two or all at a "
        "time (test_tails_taken_a_few_columns_at_a_time_are_the_same_numbers): only the "
        "temporaries' size changes",
    ),
    (
        "stats/significance.py",
        "smallest_p",
        "if n < 1:",
        "n < 1",
        "n < 0",
        "at n = 0 the paths below give 1 too: the t-test's n >= 2 fails, and 2^-0 = 1 for"
        " the sign flips",
    ),
    (
        "gate/checks/run_noise.py",
        "run_spread",
        "if len(side) < 2:",
        "len(side) < 2",
        "len(side) < 1",
        "a side of one run adds its mean's distance to itself, 0, to the squares and "
        "1 - 1 = 0 to the df: compare refuses non-finite scores, and a NaN is filled",
    ),
    (
        "gate/checks/family.py",
        "concentrated_p",
        "return 0.0",
        "0.0",
        "-0.0",
        "-0.0 equals 0.0: the p-value is only compared with a level, and blind_reason "
        "prints it only when above one",
    ),
    (
        "stats/saddlepoint.py",
        "<module>",
        "_TINIEST = float(np.nextafter(0.0, 1.0))",
        "np.nextafter(0.0, 1.0)",
        "np.nextafter(0.0, 2.0)",
        "the float after 0 toward 1 or toward 2 is the same smallest subnormal",
    ),
    (
        "stats/sequential.py",
        "bound",
        "@lru_cache(maxsize=4096)",
        "lru_cache(maxsize=4096)",
        "lru_cache(maxsize=4095)",
        "the size of the cache: bound is pure and returns an immutable value, so an entry "
        "evicted sooner or later is computed again to the same floats; only time changes",
    ),
    (
        "stats/sequential.py",
        "bound",
        "@lru_cache(maxsize=4096)",
        "lru_cache(maxsize=4096)",
        "lru_cache(maxsize=4097)",
        "the size of the cache: bound is pure and returns an immutable value, so an entry "
        "evicted sooner or later is computed again to the same floats; only time changes",
    ),
    (
        "stats/run_shift.py",
        "shifted_bars",
        "@functools.lru_cache(maxsize=256)",
        "functools.lru_cache(maxsize=256)",
        "functools.lru_cache(maxsize=255)",
        "the size of the cache: shifted_bars is pure and returns an immutable value, so an entry "
        "evicted sooner or later is computed again to the same floats; only time changes",
    ),
    (
        "stats/run_shift.py",
        "shifted_bars",
        "@functools.lru_cache(maxsize=256)",
        "functools.lru_cache(maxsize=256)",
        "functools.lru_cache(maxsize=257)",
        "the size of the cache: shifted_bars is pure and returns an immutable value, so an entry "
        "evicted sooner or later is computed again to the same floats; only time changes",
    ),
    (
        "history/record.py",
        "_finite",
        "return isinstance(value, int | float) and not isinstance(value, bool) and "
        "math.isfinite(value)",
        "isinstance(value, int | float) and (not isinstance(value, bool)) and math.isfinite(value)",
        "-(isinstance(value, int | float) and (not isinstance(value, bool)) and "
        "math.isfinite(value))",
        "the and chain gives a bool, and -True is -1 (true), -False 0 (false): every caller "
        "reads _finite only as a condition",
    ),
    (
        "history/record.py",
        "pr_number",
        'subject = message.strip().split("\\n", 1)[0] if message.strip() else ""',
        "message.strip().split('\\n', 1)",
        "message.strip().split('\\n', 2)",
        "the first piece of a split is the text up to the first newline for any maxsplit of 1"
        " or more",
    ),
    (
        "history/record.py",
        "result_entry",
        'subject=_text(subject.strip().split("\\n", 1)[0] if subject.strip() else ""),',
        "subject.strip().split('\\n', 1)",
        "subject.strip().split('\\n', 2)",
        "the first piece of a split is the text up to the first newline for any maxsplit of 1"
        " or more",
    ),
    (
        "stats/quantile_tests.py",
        "quantile_change",
        "step = max(1, _CHUNK_CELLS // n)",
        "max(1, _CHUNK_CELLS // n)",
        "max(2, _CHUNK_CELLS // n)",
        "it binds only past 250,000 pairs, and then draws two resamples a chunk instead of "
        "one: the generator's rows come from the same stream in the same order (random((2, "
        "t)) is random((1, t)) twice), so only memory changes; the last chunk is cut to the "
        "resamples left",
    ),
    (
        "stats/run_shift.py",
        "shifted_tail",
        "arg = (x[wide][:, None] - sd[wide][:, None] * z) / shift[wide][:, None]",
        "x[wide][:, None] - sd[wide][:, None] * z",
        "x[wide][:, None] + sd[wide][:, None] * z",
        "Z is symmetric and so is its rule: hermegauss(64)'s nodes are exactly -nodes[::-1] "
        "and its weights exactly weights[::-1], so x + sd z takes the same 64 terms as x - sd"
        " z, summed in the reverse order (equal but for that sum's last-bit rounding)",
    ),
    (
        "gate/baseline/retrieved_ids.py",
        "unknown_retrieval",
        "if corpus is None or not list(itertools.islice(_ids(top_k), 1)):",
        "itertools.islice(_ids(top_k), 1)",
        "itertools.islice(_ids(top_k), 2)",
        "only whether the slice is empty is read: the first id or the first two are empty "
        "together, when nothing was retrieved",
    ),
    (
        "gate/baseline/rechunk.py",
        "_keep_highest",
        "if key not in pairs or grade > pairs[key]:",
        "grade > pairs[key]",
        "grade >= pairs[key]",
        "at an equal grade the pair is set to the value it holds (a -0.0 for a 0.0 at most, "
        "which every comparison and gain reads alike)",
    ),
    (
        "gate/explain/diagnostics.py",
        "unjudged_summary",
        "at = np.minimum(np.searchsorted(known, pairs), max(len(known) - 1, 0))",
        "max(len(known) - 1, 0)",
        "max(len(known) - 1, -1)",
        "the two differ only with no known pair, where `at` is never read: the next line "
        "takes every pair as fresh without indexing `known`",
    ),
    (
        "gate/baseline/side_file_bytes.py",
        "<module>",
        "_DOCS_AT_ONCE = 1 << 20",
        "1 << 20",
        "0 << 20",
        "bounds the ids of one piece (memory): pieces are whole lines written in order, so "
        "the file and its sha256 are the same at any size (pieces of 0 to 15 ids in "
        "test_plain_ids_are_written_on_their_bytes_as_json_writes_them)",
    ),
    (
        "gate/baseline/side_file_bytes.py",
        "<module>",
        "_DOCS_AT_ONCE = 1 << 20",
        "1 << 20",
        "2 << 20",
        "bounds the ids of one piece (memory): pieces are whole lines written in order, so "
        "the file and its sha256 are the same at any size (pieces of 0 to 15 ids in "
        "test_plain_ids_are_written_on_their_bytes_as_json_writes_them)",
    ),
    (
        "gate/baseline/side_file_bytes.py",
        "<module>",
        "_DOCS_AT_ONCE = 1 << 20",
        "1 << 20",
        "1 << 19",
        "bounds the ids of one piece (memory): pieces are whole lines written in order, so "
        "the file and its sha256 are the same at any size (pieces of 0 to 15 ids in "
        "test_plain_ids_are_written_on_their_bytes_as_json_writes_them)",
    ),
    (
        "gate/baseline/side_file_bytes.py",
        "<module>",
        "_DOCS_AT_ONCE = 1 << 20",
        "1 << 20",
        "1 << 21",
        "bounds the ids of one piece (memory): pieces are whole lines written in order, so "
        "the file and its sha256 are the same at any size (pieces of 0 to 15 ids in "
        "test_plain_ids_are_written_on_their_bytes_as_json_writes_them)",
    ),
    (
        "gate/baseline/side_file_bytes.py",
        "_parsed",
        'if len(raw) < 2 or raw[0] != ord("[") or raw[1] != ord(\'"\'):',
        "len(raw) < 2",
        "len(raw) < 3",
        "every block ends with its newline, so a block of two bytes is refused by the "
        "test beside it either way: its second byte is a newline, not a quote",
    ),
    (
        "gate/baseline/side_file.py",
        "SideTopK.valid",
        "and int(listed.max(initial=0)) <= self._k",
        "listed.max(initial=0)",
        "listed.max(initial=1)",
        "the initial value is the maximum only when no query lists a doc, and 0 and 1 are "
        "both within k, which the file's model holds at 1 or more",
    ),
    (
        "gate/baseline/side_file.py",
        "SideTopK._read",
        'problem = top_k_problems({row[0]: docs}, {row[0]}, len(docs), "top_k")[0]',
        "top_k_problems({row[0]: docs}, {row[0]}, len(docs), 'top_k')[0]",
        "top_k_problems({row[0]: docs}, {row[0]}, len(docs), 'top_k')[-1]",
        "one labelled query whose list is k long can have one problem alone, the doc "
        "listed twice: the first problem is the last",
    ),
    (
        "gate/baseline/side_file.py",
        "_plain_rows",
        "type(row) is list and len(row) == 2 and type(row[0]) is str and type(row[1]) is list",
        "row[1]",
        "row[0]",
        "row[0] is then asked to be both a str and a list: no row is plain, and the "
        "line-by-line reader makes the same checks on the same rows and keeps the same top k",
    ),
    (
        "gate/baseline/provenance.py",
        "<module>",
        "GIT_TIMEOUT = 10.0",
        "GIT_TIMEOUT = 10.0",
        "GIT_TIMEOUT = 9.0",
        "a bound on a call that takes milliseconds, and no behaviour stated: no output, doc "
        "or message carries the value, and what is stated (a git that fails or hangs gives "
        "(None, None), test_git_state_of_a_git_that_hangs) holds at any bound; a git "
        "hanging 9 to 11 s could tell them apart, a timing no contract fixes",
    ),
    (
        "gate/baseline/provenance.py",
        "<module>",
        "GIT_TIMEOUT = 10.0",
        "GIT_TIMEOUT = 10.0",
        "GIT_TIMEOUT = 11.0",
        "a bound on a call that takes milliseconds, and no behaviour stated: no output, doc "
        "or message carries the value, and what is stated (a git that fails or hangs gives "
        "(None, None), test_git_state_of_a_git_that_hangs) holds at any bound; a git "
        "hanging 9 to 11 s could tell them apart, a timing no contract fixes",
    ),
    *(
        (
            "gate/baseline/rechunk.py",
            function,
            line,
            chunk,
            chunk.replace("[0]", "[-1]"),
            "a valid or re-anchorable drift names one chunk alone (label_drift.py builds "
            "both with a one-id tuple), so its first chunk is its last",
        )
        for function, line, chunk in (
            (
                "one_id_space",
                'if drift.kind == "re-anchorable" and drift.chunks[0] not in taken:',
                "drift.chunks[0]",
            ),
            ("one_id_space", "renamed[doc] = drift.chunks[0]", "drift.chunks[0]"),
            ("one_id_space", "taken.add(drift.chunks[0])", "drift.chunks[0]"),
            (
                "judge_across",
                "drift.chunks[0] if drift.kind in ANCHORED else None,",
                "drift.chunks[0]",
            ),
            (
                "rechunked",
                "_keep_highest(after, (row.query_id, row.drift.chunks[0]), row.grade)",
                "row.drift.chunks[0]",
            ),
        )
    ),
    *(
        (
            "gate/baseline/side_file_bytes.py",
            "<module>",
            "_BYTES_AT_ONCE = 1 << 24",
            "1 << 24",
            mutated,
            "bounds the bytes parsed at once (memory): blocks end at newlines and each checks "
            "its lines alone, so a side file is read the same at any block size, the fast "
            "reader answering as the line reader or leaving it to it "
            "(test_bytes_changed_at_random_are_read_alike_or_left_to_the_line_reader, blocks "
            "of 1, 12, 30 and 1 << 24 bytes)",
        )
        for mutated in ("1 << 25", "2 << 24", "1 << 23")
    ),
    (
        "gate/baseline/side_file_bytes.py",
        "_parsed",
        "if int(raw.max()) >= 0x80:",
        "int(raw.max()) >= 128",
        "int(raw.max()) >= 127",
        "a block whose highest byte is 0x7f is ASCII, which decodes as UTF-8 without fail: "
        "checking it as well leaves every answer as it was",
    ),
    (
        "gate/baseline/record.py",
        "top_k_problems",
        "if max(map(len, lists), default=0) <= k and sum(map(len, map(set, lists))) == sum(",
        "max(map(len, lists), default=0)",
        "max(map(len, lists), default=1)",
        "the default is the maximum only when the top k holds no query; then the loop that "
        "would name a problem has no list to read, so whether the fast check passes or "
        "not, the same problems (none) are returned",
    ),
    (
        "gate/baseline/record.py",
        "top_k_problems",
        "if max(map(len, lists), default=0) <= k and sum(map(len, map(set, lists))) == sum(",
        "max(map(len, lists), default=0)",
        "max(map(len, lists), default=-1)",
        "the default is the maximum only when the top k holds no query; then the loop that "
        "would name a problem has no list to read, so whether the fast check passes or "
        "not, the same problems (none) are returned",
    ),
    (
        "gate/baseline/side_file_bytes.py",
        "written_columns",
        "docs = blocks[0][2] if len(blocks) == 1 else ByteIds.concatenate([b[2] for b in blocks])",
        "blocks[0]",
        "blocks[-1]",
        "read only when there is one block, which is then the first and the last",
    ),
    (
        "gate/baseline/side_file_bytes.py",
        "written_pieces",
        "end = min(max(start + 1, int(reach) - 1), len(names))",
        "int(reach) - 1",
        "int(reach) - 2",
        "where a piece ends (memory): each piece still holds one query or more, whole lines "
        "in order, so the file and its sha256 are the same at any piece size (pieces of 0 "
        "to 15 ids in test_plain_ids_are_written_on_their_bytes_as_json_writes_them)",
    ),
    (
        "judging/client.py",
        "ChatClient.complete",
        "if response.status_code >= 400:",
        "response.status_code >= 400",
        "response.status_code >= 399",
        "every 3xx (httpx's is_redirect: 300 to 399) is refused as a redirect just before, so "
        "399 never reaches this test",
    ),
    *(
        (
            "gate/explain/top_k_facts.py",
            "<module>",
            "QUERIES_AT_ONCE = 1 << 13",
            "1 << 13",
            other,
            "bounds how many queries are read at once (memory): blocks are joined in query "
            "order and each query's facts and extremes are its own to the bit "
            "(test_top_k_facts: blocks of 1, 2 and 3 give what one block gives)",
        )
        for other in ("2 << 13", "1 << 12", "1 << 14")
    ),
    *(
        (
            "stats/saddlepoint.py",
            "_span",
            "if _whole_multiples(values[:64], span) and _whole_multiples(values, span):",
            ":64",
            f":{reach}",
            "the first values' check only saves time: whenever every value is a whole multiple "
            "so are any first few, so the and is the second check alone for any slice",
        )
        for reach in (63, 65)
    ),
    (
        "stats/significance.py",
        "t_tail",
        "return 0.0 if t > 0 else 1.0",
        "t > 0",
        "t > 1",
        "reached only for an infinite t: inf is above 0 and above 1, -inf below both",
    ),
    (
        "gate/checks/compare.py",
        "_p_values",
        "[cell.rows.size * math.sqrt(cell.noise.variance) if cell.noise else 0.0 "
        "for cell in cells]",
        "cell.rows.size * math.sqrt(cell.noise.variance) if cell.noise else 0.0",
        "cell.rows.size * math.sqrt(cell.noise.variance) if cell.noise else -1.0",
        "sign_flip tests a column with run noise only where its run_sd is > 0 and reads it "
        "nowhere else (its scale is a positive power of two): 0 and -1 both mean none",
    ),
    *(
        (
            "gate/checks/compare.py",
            "_p_values",
            "run_df = np.asarray([cell.noise.df if cell.noise else 0 for cell in cells], "
            "dtype=np.int64)",
            "cell.noise.df if cell.noise else 0",
            f"cell.noise.df if cell.noise else {df}",
            "sign_flip reads run_df only at the columns whose run_sd is > 0, those with run "
            "noise, whose df is the noise's",
        )
        for df in (1, -1)
    ),
    (
        "gate/checks/family.py",
        "blind_reason",
        "if member.slice == ALL and carried < n:",
        "carried < n",
        "carried <= n",
        "carried equals n only at n = 1, where the concentrated drop's smallest p is the "
        "test's own (0.5 for the sign flips, 1 for the t-test): past the first test's return, "
        "it is within the level too",
    ),
    (
        "gate/checks/verdicts.py",
        "verdict_of",
        "shown_within = None if shown_within is None else True",
        "shown_within is None",
        "shown_within is not None",
        "the same as the listed 'not shown_within is None': without require_significance "
        "a check past max_drop has regressed before within is read, so True and None lead "
        "to one verdict",
    ),
    *(
        (
            "stats/significance.py",
            function,
            "if m < 63 and (1 << m) <= resamples:",
            "m < 63",
            bound,
            f"the branches part only at {queries} queries with resamples >= 2^{queries}, "
            f"where one of them enumerates 2^{queries} sign vectors (centuries): no run of it "
            "returns a p-value to tell the two apart",
        )
        for function in ("sign_flip", "noisy_sign_flip")
        for bound, queries in (("m < 62", 62), ("m < 64", 63))
    ),
    *(
        (
            "stats/run_shift.py",
            "shifted_bars",
            "side[open_] = np.where(rejects, 1, -1)",
            original,
            moved,
            "side is read only as side > 0 and side < 0: 1 and 2 are both above 0, -1 and -2 "
            "both below",
        )
        for original, moved in (
            ("np.where(rejects, 1, -1)", "np.where(rejects, 2, -1)"),
            ("-1", "-2"),
        )
    ),
    *(
        (
            "stats/run_shift.py",
            "estimate_weights",
            "@functools.lru_cache(maxsize=64)",
            "functools.lru_cache(maxsize=64)",
            f"functools.lru_cache(maxsize={size})",
            "the size of the cache: estimate_weights is pure and its arrays read-only, so an "
            "entry evicted sooner or later is computed again to the same floats; only time changes",
        )
        for size in (63, 65)
    ),
    *(
        (
            "stats/significance.py",
            "_monte_carlo",
            "target *= 2",
            "2",
            growth,
            "the block only sets how many draws are summed between closing columns: the bytes "
            "are drawn in _draw_sizes' calls whatever the block, each tail stops at its own "
            "draw's index, and a column's sums never depend on the others still open",
        )
        for growth in ("1", "3")
    ),
    (
        "stats/significance.py",
        "_beta_fraction",
        "if abs(c * d - 1.0) < 1e-16:",
        "abs(c * d - 1.0) < 1e-16",
        "abs(c * d - 1.0) <= 1e-16",
        "c * d - 1.0 is 0 or at least 2^-53 (1.1e-16) from 0, the spacing of floats just "
        "below 1 (and twice it above): it is never 1e-16 itself, so < and <= agree",
    ),
    (
        "gate/baseline/record.py",
        "top_k_problems",
        "if max(map(len, lists), default=0) <= k and sum(map(len, map(set, lists))) == sum(",
        "max(map(len, lists), default=0) <= k",
        "max(map(len, lists), default=0) < k",
        "the fast check only skips the loop; a list of exactly k ids without a repeat sent "
        "on to it is neither longer than k nor listed twice, so the loop adds no problem",
    ),
    (
        "gate/baseline/repeats.py",
        "averaged",
        "for other in records[1:]:",
        "1:",
        "0:",
        "the first run compared with itself has its own fingerprints and query ids: it never "
        "raises, and the loop does nothing else",
    ),
    (
        "gate/explain/diagnostics.py",
        "graded_blocks",
        "cuts = np.searchsorted(query[judged], np.arange(0, max(len(ids), 1) + size, size))",
        "max(len(ids), 1)",
        "max(len(ids), 2)",
        "for 0 or 1 query ids it only adds cuts past the last block's end, which no block "
        "reads: the blocks are listed_runs', one for them either way",
    ),
    (
        "gate/explain/diagnostics.py",
        "_graded",
        "vocabulary = int(codes.max()) + 1 if len(codes) else 1",
        "int(codes.max()) + 1 if len(codes) else 1",
        "int(codes.max()) + 1 if len(codes) else 2",
        "with no doc code in either run or the qrels there is no row: the vocabulary only "
        "multiplies and divides empty arrays (pairs, label_holes._queries)",
    ),
    (
        "gate/explain/label_holes.py",
        "hole_plan",
        "top = max(float(qrels.grade.max()) if len(qrels) else 1.0, 1.0)",
        "float(qrels.grade.max()) if len(qrels) else 1.0",
        "float(qrels.grade.max()) if len(qrels) else 0.0",
        "with no judgment the outer max(..., 1.0) makes either 1.0",
    ),
    *(
        (
            "gate/explain/label_hole_extremes.py",
            "<module>",
            "CELLS = 1 << 22",
            "1 << 22",
            mutated,
            "bounds how many queries linear_extremes scores at once (memory, at least one): "
            "each query's extremes are summed per cell from its own rows (_ratio_range, "
            "_outer), so they are the same in blocks of any size",
        )
        for mutated in ("0 << 22", "1 << 21", "1 << 23", "2 << 22")
    ),
    (
        "gate/explain/label_hole_extremes.py",
        "_known_gains",
        "return np.zeros((n, 0)), relevant",
        "(n, 0)",
        "(n, 1)",
        "outside ndcg the judged gains are read for their width alone, in linear_extremes' "
        "block size (memory): _denominators returns k, 1 or R before reading them",
    ),
    (
        "gate/baseline/repeats.py",
        "averaged",
        "if any(other.get(query, ()) != lists[0].get(query, ()) for other in lists[1:])",
        "1:",
        "0:",
        "the first run's top k compared with itself never differs: the queries that vary "
        "are those another run changed, either way",
    ),
    (
        "gate/explain/label_hole_extremes.py",
        "linear_extremes",
        "width = max(u + known.shape[1], 1) * len(added)",
        "known.shape[1]",
        "known.shape[0]",
        "width only sets how many queries a block holds (memory): each query's extremes "
        "are summed from its own rows, the same in blocks of any size",
    ),
    (
        "gate/explain/label_hole_extremes.py",
        "linear_extremes",
        "rows = group[start : start + max(CELLS // width, 1)]",
        "CELLS // width",
        "CELLS * width",
        "the blocks then overlap: a query scored twice is written the same values twice "
        "(each query's extremes come from its own rows alone)",
    ),
    (
        "gate/explain/label_hole_extremes.py",
        "_known_gains",
        "inside = place < spec.k",
        "place < spec.k",
        "place <= spec.k",
        "a (k+1)th judged gain is no higher than the k kept, so it lies past rank k of every "
        "ideal ranking: _ideal_by_counts caps the ranks at k and the sort keeps k",
    ),
    (
        "gate/explain/label_hole_extremes.py",
        "first_extremes",
        "for mine, other, sign, out in ((1, 0, 1.0, high), (0, 1, -1.0, low)):",
        "-1.0",
        "-0.0",
        "the sign is read only by 'sign > 0', false for -0.0 as for -1.0",
    ),
    (
        "gate/explain/label_holes.py",
        "_ap_values",
        "judged = shown & (slot < 0)",
        "slot < 0",
        "slot < 1",
        "slot 0's row, unjudged, is then written as judged and not relevant (its grade is "
        "NaN or below 0), and the next line writes its assigned grade over it, as for every "
        "unjudged row; R counts the judged grades apart",
    ),
    (
        "gate/explain/label_hole_extremes.py",
        "_ratio_range",
        "safe = np.where(positive, denominator, 1.0)",
        "np.where(positive, denominator, 1.0)",
        "np.where(positive, denominator, 2.0)",
        "safe is read only where the denominator is positive (low / safe and high / safe "
        "are kept there, 0.0 elsewhere): its stand-in 1.0 or 2.0 only keeps the division "
        "defined",
    ),
    (
        "gate/explain/label_hole_extremes.py",
        "first_extremes",
        "if sign > 0:",
        "sign > 0",
        "sign >= 0",
        "sign is 1.0 or -1.0, never 0: > 0 and >= 0 agree on both",
    ),
    (
        "gate/explain/label_holes.py",
        "_extremes",
        "many = docs.unjudged > (most if len(grades) > 1 else np.iinfo(np.int64).max)",
        "most if len(grades) > 1 else np.iinfo(np.int64).max",
        "most if len(grades) > 1 else np.iinfo(np.int64).min",
        "_grades always holds 0 and the top grade, at least 1 (hole_plan's top, or 3 in "
        "assisted_holes' plan): with two grades or more the else is never taken",
    ),
    (
        "gate/explain/label_holes.py",
        "_extremes",
        "step = max(1, _ENUMERATED_CELLS // (len(assigned) * spec.k))",
        "_ENUMERATED_CELLS // (len(assigned) * spec.k)",
        "_ENUMERATED_CELLS * (len(assigned) * spec.k)",
        "bounds how many queries one call of _ap_values scores (memory, at least one): "
        "each query's values come from its own rows and the shared assignments, alike "
        "in chunks of any size",
    ),
    (
        "gate/explain/label_holes.py",
        "_ap_values",
        "judged = shown & (slot < 0)",
        "slot < 0",
        "slot <= 0",
        "slot 0's row, unjudged, is then written as judged and not relevant (its grade "
        "is NaN or below 0), and the next line writes its assigned grade over it",
    ),
    *(
        (
            "history/drift.py",
            "resolver.resolve",
            'done = run_git(repo, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}", '
            "timeout=30)",
            "run_git(repo, 'rev-parse', '--verify', '--quiet', f'{ref}^{{commit}}', timeout=30)",
            f"run_git(repo, 'rev-parse', '--verify', '--quiet', f'{{ref}}^{{{{commit}}}}', "
            f"timeout={bound})",
            "a bound on a local call that takes milliseconds, and no behaviour stated: no "
            "output, doc or message carries the value (a git that fails or hangs resolves to "
            "None, 'git does not know it'), which holds at any bound; a git hanging 29 to 31 s "
            "could tell them apart, a timing no contract fixes",
        )
        for bound in (29, 31)
    ),
]
