"""What ``calibration --align`` prints: its rounds, the search, the diff, kappa before and after."""

from __future__ import annotations

from typing import Any

from n8n_deepeval_pipeline.calibration.alignment_outcome import held_out_lines, text_diff


def _cost(spend: Any) -> str:
    return f"${spend.cost_usd:.4f}" + (" + unpriced" if spend.unpriced_models else "")


def align_round_line(report: Any) -> str:
    """One round of the search: best agreement so far, candidates, judge calls, cost."""
    spend = report.spend
    best = f"{report.best_score:.3f}" if report.best_score is not None else "-"
    return (
        f"round {report.number}/{report.total} · best agreement {best} · candidates "
        f"{report.candidates} · judge calls {spend.judge_calls} (+{spend.cached_judge_calls} "
        f"cached, {spend.replayed_scores} verdicts replayed) · {_cost(spend)}"
    )


def _split_line(alignment: Any) -> str:
    plan = alignment.plan
    split, settings = plan.split, plan.settings
    ties = f", {split.ties} tied left out" if split.ties else ""
    held_labels = sum(len(run.verdicts) for run in split.held_out)
    return (
        f"align {plan.text.metric} of {plan.benchmark.name} · its {plan.text.what} · "
        f"{settings.algorithm} (seed {settings.split.seed}) · training: "
        f"{len(split.rows(False))} rows, {len(split.examples)} runs{ties} · held out: "
        f"{len(split.rows(True))} rows ({', '.join(split.rows(True))}), "
        f"{len(split.held_out)} runs, {held_labels} labels"
    )


def render_alignment(alignment: Any, written: str | None) -> str:
    """The alignment as the terminal shows it; ``written``: what was written, in words."""
    outcome, plan = alignment.outcome, alignment.plan
    spend, held = outcome.spend, alignment.held_out_spend
    base = f"{outcome.base_score:.3f}" if outcome.base_score is not None else "-"
    best = f"{outcome.best_score:.3f}" if outcome.best_score is not None else "-"
    verdict = {
        "improved": f"held-out kappa improved: {written}",
        "not_improved": "held-out kappa did not improve: nothing written",
        "unchanged": "no text agreed better than the metric's own on the training runs: "
        "nothing written",
    }[alignment.decision]
    return "\n".join(
        [
            _split_line(alignment),
            f"search: {len(outcome.rounds)} rounds · {len(outcome.tried)} candidates · "
            f"{outcome.ended} · {outcome.seconds:.1f} s",
            f"  judge calls {spend.judge_calls} (+{spend.cached_judge_calls} cached, "
            f"{spend.replayed_scores} verdicts replayed) · tokens "
            f"{spend.prompt_tokens + spend.completion_tokens} · cost {_cost(spend)}",
            f"agreement on the validation runs: configured {base} · best {best}",
            "",
            text_diff(plan.text.text, outcome.best_text, plan.text.what),
            "",
            f"held out ({len(plan.split.held_out)} runs never seen by the search):",
            *held_out_lines(alignment.before, alignment.after),
            f"  judge calls {held.judge_calls} (+{held.cached_judge_calls} cached, "
            f"{held.replayed_scores} verdicts replayed) · cost {_cost(held)}",
            f"judge calls in all: {alignment.judge_calls}",
            verdict,
        ]
    )


def alignment_json(alignment: Any, written: str | None) -> dict[str, Any]:
    """The alignment as ``--json`` prints it."""
    plan = alignment.plan
    return {
        "metric": plan.text.metric,
        "text_kind": plan.text.kind,
        "algorithm": plan.settings.algorithm,
        "seed": plan.settings.split.seed,
        "training_rows": plan.split.rows(False),
        "held_out_rows": plan.split.rows(True),
        "training_runs": len(plan.split.examples),
        "held_out_runs": len(plan.split.held_out),
        "outcome": alignment.outcome.model_dump(mode="json"),
        "before": alignment.before.model_dump(mode="json"),
        "after": alignment.after.model_dump(mode="json"),
        "held_out_spend": alignment.held_out_spend.model_dump(mode="json"),
        "judge_calls": alignment.judge_calls,
        "decision": alignment.decision,
        "written": written,
    }
