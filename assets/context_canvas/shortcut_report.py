"""The anti-shortcut report (ContextCanvas criterion 7): can the answer be had without looking?

Pure logic: assets/context_canvas/logic/shortcuts.py (label balance, option length against gold, majority baseline) and
assets/context_canvas/logic/text_only.py (the text-only request). Every case is asked once per answerer without its images
through the provider layer (cached, logged); the report compares that run with always answering the most frequent
gold option. The report covers every stored case, retained or not, since shortcuts are a reason to drop one.
"""

import json

from dagster import AssetExecutionContext, MaterializeResult, asset

from assets.context_canvas.review import context_case_review
from assets.context_canvas.settings import ContextSettings
from assets.core.item_loop import Done, Item, Kept, Outcome, Rejected, run_items
from assets.context_canvas.logic.case_records import ContextCase
from assets.context_canvas.logic.offline_answers import context_offline_answers
from assets.context_canvas.logic.shortcuts import shortcut_report
from assets.context_canvas.logic.text_only import answer_parser, build_text_only_request, repair_request
from assets.context_canvas.store import drop_answers_of_gone_cases, stored_cases, write_shortcut_report, write_text_only_answers
from assets.core.model_calls import CallSettings
from assets.core.model_call_store import role_caller
from assets.core.materialization import writes
from assets.core.step import recorded_step
from resources.model_providers import ModelProvidersResource
from resources.warehouse import WarehouseResource
from warehouse.lineage import ActivityLog

TEXT_ONLY_STAGE = "context_text_only"


@asset(
    metadata=writes("context_shortcut_report", "context_text_only_answer"),
    code_version="1",
    deps=[context_case_review],
    description="Gold-label balance (Yes rate), option length against gold, and a text-only answer run through the"
    " provider layer compared with the majority baseline.",
)
def context_shortcut_report(context: AssetExecutionContext, warehouse: WarehouseResource,
                            model_providers: ModelProvidersResource, context_canvas: ContextSettings) -> MaterializeResult:
    wh = warehouse.get_warehouse()
    role = model_providers.role(context_canvas.text_only_role)
    answerer = f"{role.provider}/{role.model}"
    with recorded_step(context, wh, {"role": context_canvas.text_only_role, "answerer": answerer}) as step:
        caller, config = role_caller(wh, step.activity_id, model_providers, context_canvas.text_only_role, repair_request,
                                     offline=context_offline_answers)
        settings = CallSettings(config.model, config.temperature, config.max_output_tokens)
        with step.batch() as log:
            cases = stored_cases(log.con)
            answered = dict(log.con.execute(
                "SELECT case_id, case_key FROM context_text_only_answer WHERE answerer = ?", [answerer]).fetchall())
        items = [Item(f"{case.case_id}|{answerer}", case.locator, case.case_key, case) for case in cases
                 if answered.get(case.case_id) != case.case_key]  # an edited case is asked again

        def ask(item: Item[ContextCase]) -> Outcome:
            """One case asked without its images; an invalid answer is stored as no answer, so it is not asked again."""
            case = item.payload
            outcome = caller.call(build_text_only_request(case, settings), answer_parser(case), item_id=case.case_id)
            if not outcome.ok:
                return Rejected(outcome.reason_code or outcome.status, outcome.detail, value=outcome)
            return Kept(outcome, count="answered")

        def write(log: ActivityLog, done: list[Done[ContextCase]]) -> None:
            write_text_only_answers(log.con, [
                {"case_id": d.item.payload.case_id, "case_key": d.item.payload.case_key, "answerer": answerer,
                 "answer": d.outcome.value.value if d.kept else None, "call_ids": list(d.outcome.value.call_ids),
                 "activity_id": log.activity_id} for d in done])
            log.unrejected(TEXT_ONLY_STAGE, [d.item.key for d in done if d.kept])
            step.counts["requests_sent"] += sum(d.outcome.value.requests_sent for d in done)

        try:
            run_items(step, TEXT_ONLY_STAGE, items, ask, write, before_write=caller.store.flush)
        finally:
            caller.store.close()
        with step.batch() as log:
            drop_answers_of_gone_cases(log.con, answerer)
            answers = dict(log.con.execute("SELECT case_id, answer FROM context_text_only_answer WHERE answerer = ?",
                                           [answerer]).fetchall())
            report = shortcut_report(cases, answers) if cases else {"n_cases": 0}
            write_shortcut_report(log.con, {"answerer": answerer, "figures": json.dumps(report, sort_keys=True),
                                            "activity_id": log.activity_id})
        step.notes["report"] = report
    return step.result()
