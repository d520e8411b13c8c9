"""The latency sweep's tables: per operation, each arm's rows/s against the round-trip time the proxy added."""

from __future__ import annotations

from collections import defaultdict

from pytest_ormbench.workload.spec import MODELS, OPS
from pytest_ormbench.workload.cells import format_rtt
from pytest_ormbench.arms.registry import CONTROL_ARMS
from pytest_ormbench.results.report.format import NO_FIGURE, fmt_rate, fmt_ratio
from pytest_ormbench.results.report.load import Runs
from pytest_ormbench.results.report.table import Table
from pytest_ormbench.results.report.tables.noise import Figure, leader, rate_figure
from pytest_ormbench.results.report.tables.rates import machines_line
from pytest_ormbench.results.report.tables.scope import all_arm_order, labels, per_arm, timed_groups, whole

#: under a sweep table whose rows come from more than one machine
ACROSS_MACHINES = ("Rows from {count} machines (the Runs table's Machine column): {which}. Rows/s of different "
                   "machines are not comparable: no arm is named as leading among them; read each row's last column, "
                   "its own ratio.")


def sweep_figures(runs: Runs, db: str, model: str, mode: str, table: str) -> dict[str, dict[str, dict[float, float]]]:
    """op -> arm -> RTT (ms) -> rows/s, of one group's latency-sweep cells on ``db`` (timed records only)."""
    out: dict[str, dict[str, dict[float, float]]] = defaultdict(lambda: defaultdict(dict))
    for cell in whole(runs).cells.values():
        k = cell.record.key
        if k.db == db and k.rtt_ms is not None and (k.model, k.mode, k.table) == (model, mode, table):
            if cell.rows_per_s is not None:
                out[k.op][k.arm][k.rtt_ms] = cell.rows_per_s
    return out


def sweep_groups(runs: Runs, db: str) -> list[tuple[str, str, str]]:
    """(model, mode, table) with latency-sweep figures on ``db``, in report order."""
    sweep = whole(runs).at(db, sweep=True)
    return [g for g in timed_groups(sweep) if sweep_figures(runs, db, *g)]


def latency(runs: Runs, db: str) -> list[Table]:
    """The latency sweep on a server database: per op, rows/s of each arm against the round-trip time.

    Rows are arms, columns the RTTs the proxy added (and "direct", the same cell without the proxy, when it
    ran); the last column is the figure at the highest RTT over the one at the lowest. A note names the arm
    that leads at the lowest RTT and the one at the highest, when they differ: where an ORM's extra round
    trips start to cost more than its Python does. A lead within the noise (``noise.leader``) names nobody.
    """
    names = labels(runs)
    direct = whole(runs).at(db)
    out = []
    for model, mode, table in sweep_groups(runs, db):
        per_op = sweep_figures(runs, db, model, mode, table)
        swept: dict[tuple[str, str, float], Figure] = {}  # (op, arm, rtt) -> the figure with its rounds
        for cell in whole(runs).cells.values():
            k = cell.record.key
            if k.db == db and k.rtt_ms is not None and (k.model, k.mode, k.table) == (model, mode, table):
                fig = rate_figure(cell)
                if fig is not None:
                    swept[(k.op, k.arm, k.rtt_ms)] = fig
        plain = per_arm(direct, model, mode, table, lambda c: (c.sweep_direct_cell or c).rows_per_s)  # the sweep's own
        rtts = sorted({r for arms in per_op.values() for rs in arms.values() for r in rs})
        lo, hi = rtts[0], rtts[-1]
        for op in OPS:
            by_arm = per_op.get(op.letter)
            if not by_arm:
                continue
            arms = [a for a in all_arm_order(runs) if a in by_arm]
            with_direct = any(op.letter in plain.get(a, {}) for a in arms)
            header = ["Arm", *(["direct"] if with_direct else []), *(f"{format_rtt(r)} ms" for r in rtts),
                      *([f"{format_rtt(hi)} ms / {format_rtt(lo)} ms"] if len(rtts) > 1 else [])]
            rows = []
            for arm in arms:
                vals = by_arm[arm]
                ratio = vals[hi] / vals[lo] if lo in vals and hi in vals and vals[lo] else None
                rows.append([names[arm], *([fmt_rate(plain.get(arm, {}).get(op.letter))] if with_direct else []),
                             *(fmt_rate(vals.get(r)) for r in rtts), *([fmt_ratio(ratio)] if len(rtts) > 1 else [])])
            notes = ["Rows/s with the arm reaching the server through the latency proxy, which holds every round "
                     "trip for the RTT the column names"
                     + ("; direct: the same cell without the proxy, from the sweep's own run when it ran one (else the "
                        "figure of the section above)" if with_direct
                        else "")
                     + (f"; the last column is the figure at {format_rtt(hi)} ms over the one at {format_rtt(lo)} ms "
                        "(×0.10: a tenth as fast)." if len(rtts) > 1 else ".")]
            others = [a for a in arms if a not in CONTROL_ARMS]
            contenders = others or arms  # the control arms are yardsticks, not contenders, as in Best
            lead = {}
            for rtt in (lo, hi):
                arm, clear = leader(runs, {a: swept[(op.letter, a, rtt)] for a in contenders
                                           if (op.letter, a, rtt) in swept})
                if arm is not None and clear:  # a lead within the noise names nobody
                    lead[rtt] = arm
            if lo in lead and hi in lead and lead[lo] != lead[hi]:
                a, b = lead[lo], lead[hi]
                among = "of the ORMs, " if others and len(others) < len(arms) else ""
                notes.append(f"{op.letter} {op.title}: {among}{names[a]} leads at {format_rtt(lo)} ms "
                             f"({fmt_rate(by_arm[a][lo])} rows/s), {names[b]} at {format_rtt(hi)} ms "
                             f"({fmt_rate(by_arm[b][hi])} rows/s).")
            if any(c == "—" for r in rows for c in r[1:]):
                notes.append(NO_FIGURE)
            # the swept cells, and the direct column's: the sweep's own direct cell where it ran one (as ``plain``)
            notes += machines_line(runs, ((k, c if k.rtt_ms is not None else (c.sweep_direct_cell or c))
                                          for k, c in whole(runs).cells.items() if k.db == db and k.op == op.letter
                                          and (k.model, k.mode, k.table) == (model, mode, table)
                                          and (k.rtt_ms is not None or (with_direct and k.arm in arms))),
                                   ACROSS_MACHINES)
            title = (f"{op.letter} {op.title} — {MODELS[model].title}, {mode}, {table} table "
                     "(rows/s against RTT, higher is better)")
            out.append(Table(title, header, rows, notes, anchor=f"latency-{db}-{model}-{mode}-{table}-{op.letter}"))
    return out
