"""`check`'s plan: the config and the options settled, and every rule of what combines, once."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from retrieval_gate.config.check_keys import Kind, kind_of
from retrieval_gate.config.schema import GateConfig, NoiseProbeConfig, SequentialConfig
from retrieval_gate.errors import GateError
from retrieval_gate.judging.spend import Budget
from retrieval_gate.pipeline.record import saved_run_repeats


@dataclass(frozen=True, kw_only=True, eq=False)
class CheckPlan:
    """What `check` will do, settled before anything runs: the config, and the options (the
    command line's flags, or `check`'s keywords) read against it."""

    config: GateConfig
    run_path: str | Path | None
    """A saved run to score instead of calling the retriever (--run), as given."""
    baseline_path: str | Path | None
    """The baseline file given instead of the config's `baseline` (--baseline)."""
    cache: bool
    refresh_cache: bool
    trust_cache: bool
    repeats: int
    """Runs of the retriever a side: --repeats, else gate.repeats."""
    against: str | None
    """The git ref whose retriever is the reference (--against), instead of the baseline."""
    sequential: SequentialConfig | None
    """The early fail's settings when asked for (--sequential or gate.sequential), whether
    or not a saved run leaves anything to stop early."""
    judge: bool = True
    """Under gate.labels human+llm, grade the pool pairs new to the layer before deciding
    (--no-judge: off)."""
    judge_budget: Budget | None = None
    """What that grading may spend: judge.budget with --max-judge-calls and --max-judge-cost
    over it; None without a judge."""
    noise_probe: NoiseProbeConfig | None = None
    """The noise probe's settings when it runs: gate.noise_probe, unless --no-noise-probe,
    repeats (they measure the noise themselves), a saved run or an early fail."""
    unprobed: str = ""
    """Why the noise probe asked for did not run, for the reports ("" when it did or was off)."""

    @property
    def baseline(self) -> Path:
        """The committed baseline's file."""
        if self.baseline_path:
            return Path(self.baseline_path)
        return self.config.resolve(self.config.baseline)

    @property
    def saved(self) -> bool:
        """Whether the current side is a saved run, which costs nothing to read whole."""
        return self.run_path is not None or self.config.retriever.type == "run_file"

    @property
    def stops_early(self) -> bool:
        """Whether the check runs the queries in batches and may stop early (sequential.py)."""
        return self.sequential is not None and not self.saved


def plan_check(
    config: GateConfig,
    *,
    run_path: str | Path | None = None,
    baseline_path: str | Path | None = None,
    cache: bool = True,
    refresh_cache: bool = False,
    trust_cache: bool = False,
    repeats: int | None = None,
    against: str | None = None,
    sequential: bool | None = None,
    judge: bool = True,
    max_judge_calls: int | None = None,
    max_judge_cost: float | None = None,
    noise_probe: bool = True,
) -> CheckPlan:
    """The plan of `check`'s keywords (the defaults of `config` where a keyword is None);
    `sequential` False runs every query whatever gate.sequential says, `noise_probe` False
    probes no noise whatever gate.noise_probe says. Not yet validated."""
    steps = None
    if sequential is not False:
        steps = config.gate.sequential or (SequentialConfig() if sequential else None)
    runs = config.gate.repeats if repeats is None else repeats
    probe = config.gate.noise_probe if noise_probe and runs == 1 else None
    saved = run_path is not None or config.retriever.type == "run_file"
    unprobed = ""
    if probe is not None and saved:
        probe, unprobed = None, "a saved run cannot be run again: its noise was not probed"
    elif probe is not None and steps is not None:
        probe, unprobed = None, "gate.sequential runs the queries once: the noise was not probed"
    return CheckPlan(
        config=config,
        run_path=run_path,
        baseline_path=baseline_path,
        cache=cache,
        refresh_cache=refresh_cache,
        trust_cache=trust_cache,
        repeats=runs,
        against=against,
        sequential=steps,
        judge=judge,
        judge_budget=(
            Budget.of(config.judge, max_judge_calls, max_judge_cost) if config.judge else None
        ),
        noise_probe=probe,
        unprobed=unprobed,
    )


@dataclass(frozen=True, kw_only=True)
class Rule:
    """Options that do not go together: when `refuses` the plan, `message` says what to do."""

    name: str
    refuses: Callable[[CheckPlan], bool]
    message: Callable[[CheckPlan], str]


def validate(plan: CheckPlan) -> None:
    """A GateError (exit 2) saying what to do, for the first rule that refuses `plan`."""
    refused = refusals(plan)
    if refused:
        raise GateError(refused[0].message(plan))


def refusals(plan: CheckPlan) -> list[Rule]:
    """The rules that refuse `plan`, in RULES' order."""
    return [rule for rule in RULES if rule.refuses(plan)]


def _checks_of(plan: CheckPlan, kind: Kind) -> list[str]:
    return [key for key in plan.config.metrics if kind_of(key) == kind]


def _evaluators_message(plan: CheckPlan) -> str:
    """Names what asked for the early fail: the flag, or the key and its config file."""
    checks = ", ".join(f"metrics.{key}" for key in _checks_of(plan, "evaluator"))
    if plan.config.gate.sequential is None:
        return (
            "check --sequential stops before every query ran, but an evaluator's export "
            f"scores them all ({checks}): drop --sequential"
        )
    return (
        f"{plan.config.path}: gate.sequential stops before every query ran, but an "
        f"evaluator's export scores them all ({checks}): unset gate.sequential in this "
        "config, or pass --no-sequential"
    )


# The order is the order of the checks before the plan, so that a plan several rules refuse
# is told the same first thing.
RULES: tuple[Rule, ...] = (
    Rule(
        name="sequential-evaluators",
        refuses=lambda plan: plan.sequential is not None and bool(_checks_of(plan, "evaluator")),
        message=_evaluators_message,
    ),
    Rule(
        name="sequential-against",
        refuses=lambda plan: plan.sequential is not None and plan.against is not None,
        message=lambda plan: (
            "gate.sequential (check --sequential) runs the retriever against the committed "
            "baseline, batch by batch; --against runs both commits whole: drop one of them"
        ),
    ),
    Rule(
        name="sequential-repeats",
        refuses=lambda plan: plan.sequential is not None and plan.repeats > 1,
        message=lambda plan: (
            f"gate.sequential stops one run early; repeats {plan.repeats} averages whole runs: "
            "set gate.repeats to 1 (or drop --repeats), or turn gate.sequential off"
        ),
    ),
    Rule(
        name="sequential-labels",
        refuses=lambda plan: plan.sequential is not None and plan.config.gate.uses_llm_labels,
        message=lambda plan: (
            "gate.sequential needs gate.labels: human; with human+llm the judge's labels of "
            "every query decide together: turn one of them off"
        ),
    ),
    Rule(
        name="sequential-unlabelled",
        refuses=lambda plan: plan.sequential is not None and plan.config.unlabelled is not None,
        message=lambda plan: (
            "gate.sequential stops early on the labelled queries, and the unlabelled: "
            "checks run on every sampled query: turn gate.sequential off, or drop the "
            "unlabelled: block"
        ),
    ),
    Rule(
        name="sequential-operational",
        refuses=lambda plan: plan.sequential is not None and bool(_checks_of(plan, "operational")),
        message=lambda plan: (
            "gate.sequential stops early on relevance checks alone; latency and cost "
            "checks need every query: turn gate.sequential off, or drop them"
        ),
    ),
    Rule(
        name="against-run-or-baseline",
        refuses=lambda plan: (
            plan.against is not None
            and (plan.run_path is not None or plan.baseline_path is not None)
        ),
        message=lambda plan: (
            "--against runs the retriever at both commits: it takes neither --run nor --baseline"
        ),
    ),
    Rule(
        name="saved-run-repeats",
        refuses=lambda plan: plan.run_path is not None and plan.repeats > 1,
        message=lambda plan: saved_run_repeats(plan.repeats),
    ),
)
