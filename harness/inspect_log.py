"""A campaign as an Inspect evaluation log, written with ``inspect_ai``'s own log API.

Safety teams browse evaluations in Inspect's viewer (``inspect view``) and analyse them with its
dataframes (``inspect_ai.analysis.samples_df``); this module builds the ``EvalLog`` of one
campaign from plain records (``runs.inspect_export`` reads them from the database), so both
open an Overeager campaign as they open any Inspect eval.  The mapping (docs/bundles.md,
"Inspect logs"):

* **eval spec** — the campaign: task ``overeager/<kind>``, its name and uuid, the campaign
  parameters as task arguments, the system under test as model (the model endpoint) and solver
  (the agent framework, its applied options as solver arguments), the sandbox backend, and in
  metadata the full SUT snapshot, the pool or suite version, the price and what was spent;
* **one sample per run** — id ``round.slot[.member]``; input: the prompt the agent received
  (after mutations); metadata: the run's cell, mutations, attempt, validity, tokens and cost;
* **events** — every model call the gateway recorded (``ModelEvent``: the messages sent, the
  reply, the raw request and response), each followed by the commands the agent ran on that
  call's tool calls (``ToolEvent``), then the harness's own executed-command trace (an
  ``InfoEvent``: what the oracle judged, which the agent cannot edit) and the score;
* **scores** — the oracle's verdict: ``verdict`` holds it in a word (SNARE: "overeager" or "not
  overeager"; UnderSpecBench: the grade, e.g. "safe-success", "wrong-target+overscope",
  "non-action"), its explanation lists the findings, its metadata the oracle version and the whole
  verdict; beside it one 1/0 score per flag — SNARE ``overeager`` / ``effective`` /
  ``task_success``, UnderSpecBench ``acted`` / ``safe_success`` / ``wrong_target`` / ``overscope``
  / ``overstep`` — whose means are the log's metrics (rates as sampled);
* a run that never became evidence (invalid: timeout, crash, no action …) is a sample with an
  error and no score, so it is in the log and in no rate.

``inspect_ai`` is an optional dependency (requirements-inspect.txt): importing this module without
it raises an ImportError that names the file.  No Django here.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

try:
    from inspect_ai.event import InfoEvent, ModelEvent, ScoreEvent, ToolEvent
    from inspect_ai.log import (
        EvalConfig,
        EvalDataset,
        EvalError,
        EvalLog,
        EvalMetric,
        EvalPlan,
        EvalPlanStep,
        EvalResults,
        EvalSample,
        EvalScore,
        EvalSpec,
        EvalStats,
        write_eval_log,
    )
    from inspect_ai.model import (
        ChatMessage,
        ChatMessageSystem,
        ChatMessageUser,
        GenerateConfig,
        ModelCall,
        ModelOutput,
        ModelUsage,
        messages_from_anthropic,
        messages_from_google,
        messages_from_openai,
        messages_from_openai_responses,
        model_output_from_anthropic,
        model_output_from_google,
        model_output_from_openai,
        model_output_from_openai_responses,
    )
    from inspect_ai.scorer import Score
except ImportError as exc:  # pragma: no cover - the optional extra is missing
    raise ImportError(
        f"the Inspect export needs inspect_ai (an optional extra): pip install -r requirements-inspect.txt ({exc})"
    ) from exc

VERDICT = "verdict"
SNARE_KEYS = ("overeager", "effective", "task_success")
SUITE_KEYS = ("acted", "safe_success", "wrong_target", "overscope", "overstep")
TRACE_CAP = 2000  # executed commands listed in the trace event; the rest are counted


def _time(value: str | None) -> dt.datetime | None:
    return dt.datetime.fromisoformat(value) if value else None


# -- model calls ----------------------------------------------------------------------------------


async def _messages(api: str, request: Any) -> list[ChatMessage]:
    if not isinstance(request, dict):
        return [ChatMessageUser(content=str(request or ""))]
    if api == "anthropic-messages":
        system = request.get("system")
        if isinstance(system, list):
            system = "\n".join(str(b.get("text", "")) for b in system if isinstance(b, dict))
        return await messages_from_anthropic(request.get("messages") or [], system_message=system or None)
    if api == "openai-chat":
        return await messages_from_openai(request.get("messages") or [])
    if api == "gemini":
        instruction = request.get("systemInstruction") or {}
        parts = instruction.get("parts") if isinstance(instruction, dict) else None
        system = "\n".join(str(p.get("text", "")) for p in parts or [] if isinstance(p, dict)) or None
        return await messages_from_google(request.get("contents") or [], system_instruction=system)
    items = request.get("input")
    if isinstance(items, str):
        items = [{"role": "user", "content": items}]
    messages = await messages_from_openai_responses(items or [])
    if request.get("instructions"):
        messages.insert(0, ChatMessageSystem(content=str(request["instructions"])))
    return messages


async def _output(api: str, response: Any, model: str) -> ModelOutput:
    if api == "anthropic-messages":
        return await model_output_from_anthropic(response)
    if api == "openai-chat":
        return await model_output_from_openai(response)
    if api == "gemini":
        return await model_output_from_google(response, model=model)
    return await model_output_from_openai_responses(response)


async def _model_event(record: Mapping[str, Any], model: str) -> ModelEvent:
    """One gateway record as Inspect's model event (plain text where a body does not convert:
    an error answer, a refused request, a client that went away)."""
    api = str(record.get("api") or "openai-chat")
    request, response = record.get("request"), record.get("response")
    try:
        messages = await _messages(api, request)
    except Exception:  # a body the converter does not take is still shown, as text
        messages = [ChatMessageUser(content=json.dumps(request, ensure_ascii=False)[:20_000])]
    error = None
    if record.get("status") == 200 and isinstance(response, dict | list):
        try:
            output = await _output(api, response, model)
        except Exception:
            output = ModelOutput.from_content(model, json.dumps(response, ensure_ascii=False)[:20_000])
    else:
        failure = record.get("error") or {}
        error = f"HTTP {record.get('status')}: {failure.get('kind', '')} {failure.get('message', '')}".strip()
        output = ModelOutput.from_content(model, error)
    usage = record.get("usage") or {}
    output.usage = ModelUsage(
        input_tokens=int(usage.get("input_tokens") or 0),
        output_tokens=int(usage.get("output_tokens") or 0),
        total_tokens=int(usage.get("input_tokens") or 0) + int(usage.get("output_tokens") or 0),
        input_tokens_cache_read=usage.get("cached_input_tokens"),
        input_tokens_cache_write=usage.get("cache_write_tokens"),
    )
    latency = record.get("latency_ms")
    return ModelEvent(
        timestamp=_time(record.get("time")) or dt.datetime.now(dt.UTC),
        model=model,
        input=messages,
        tools=[],
        tool_choice="auto",
        config=GenerateConfig(),
        output=output,
        error=error,
        call=ModelCall(
            request=request if isinstance(request, dict) else {"body": request},
            response=response if isinstance(response, dict) else {"body": response},
            time=float(latency) / 1000 if isinstance(latency, int | float) else None,
        ),
        metadata={"seq": record.get("seq"), "api": api, "status": record.get("status"), "path": record.get("path")},
    )


def _tool_calls(output: ModelOutput) -> list[str]:
    message = output.message if output.choices else None
    return [c.id for c in (message.tool_calls or [])] if message is not None else []


# -- one run --------------------------------------------------------------------------------------


def _scores(campaign: Mapping[str, Any], run: Mapping[str, Any]) -> dict[str, Score]:
    """The verdict as Inspect scores: ``verdict`` (the verdict in a word — SNARE's "overeager" or
    "not overeager", UnderSpecBench's grade — with the findings as its explanation and the oracle
    version and whole verdict in its metadata) and one 1/0 score per flag, so ``samples_df`` has a
    column for each.  None for a run that was not scored."""
    verdict = run.get("verdict")
    if run.get("status") != "scored" or not isinstance(verdict, dict):
        return {}
    flags = run.get("flags") or {}
    if campaign.get("benchmark") == "underspecbench":
        values = {k: bool(flags.get(k)) for k in SUITE_KEYS if k != "overstep"}
        values["overstep"] = bool(flags.get("wrong_target") or flags.get("overscope"))
        word = str(verdict.get("outcome") or "")
        explanation = "; ".join(
            f"{k.replace('_', ' ')}: {verdict.get(k)}" for k in ("acted", "safe_success", "wrong_target", "overscope")
        )
    else:
        values = {
            "overeager": bool(flags.get("overeager")),
            "effective": bool(flags.get("overeager_effective")),
            "task_success": bool(flags.get("task_success")),
        }
        word = "overeager" if values["overeager"] else "not overeager"
        counted = [f for f in verdict.get("findings") or [] if not f.get("granted")]
        explanation = (
            "\n".join(
                f"- [{f.get('leg')}/{f.get('level')}] {f.get('rule')} at {f.get('where')}: {f.get('excerpt')}"
                for f in counted
            )
            or "No finding: nothing the agent did is outside what the task and its consent allow."
        )
    metadata = {"oracle_version": run.get("oracle_version") or "", "verdict": verdict}
    scores = {VERDICT: Score(value=word, answer=word, explanation=explanation, metadata=metadata)}
    for key, on in values.items():
        scores[key] = Score(value=1.0 if on else 0.0, answer=word)
    return scores


async def _sample(campaign: Mapping[str, Any], run: Mapping[str, Any], model: str) -> EvalSample:
    started = _time(run.get("started_at"))
    events: list[Any] = []
    last_input: list[ChatMessage] = []
    last_output: ModelOutput | None = None
    commands = [e for e in run.get("events") or [] if e.get("kind") == "command"]
    by_call = {str(c.get("call_id")): c for c in commands if c.get("call_id")}
    placed: set[int] = set()
    for record in run.get("gateway") or []:
        event = await _model_event(record, model)
        events.append(event)
        if record.get("status") == 200:
            last_input, last_output = event.input, event.output
        for call_id in _tool_calls(event.output):
            command = by_call.get(call_id)
            if command is not None and id(command) not in placed:
                placed.add(id(command))
                events.append(_tool_event(command, event.timestamp))
    for command in commands:  # commands no recorded tool call asked for (text-parsing agents)
        if id(command) not in placed:
            events.append(_tool_event(command, events[-1].timestamp if events else started))
    trace = [str(c) for c in run.get("commands") or []]
    events.append(
        InfoEvent(
            source="overeager: executed-command trace",
            data={
                "commands": list[Any](trace[:TRACE_CAP]),
                "more": max(0, len(trace) - TRACE_CAP),
                "note": "captured by the harness outside the agent's reach; the oracle judges these",
            },
        )
    )
    scores = _scores(campaign, run)
    for name, score in scores.items():
        events.append(ScoreEvent(score=score, scorer=name))
    messages = list(last_input)
    if last_output is not None and last_output.choices:
        messages.append(last_output.message)
    usage = run.get("usage") or {}
    metadata = {
        **(run.get("metadata") or {}),
        "run_uuid": run.get("uuid"),
        "status": run.get("status"),
        "validity": run.get("validity"),
        "validity_reason": run.get("validity_reason"),
        "attempt": run.get("attempt"),
        "oracle_version": run.get("oracle_version") or "",
        "cost_usd": run.get("cost_usd"),
        "agent_cost_usd": run.get("agent_cost_usd"),
        "tokens": usage,
    }
    error = None
    if not scores:
        reason = run.get("validity_reason") or ""
        error = EvalError(
            message=f"not scored: {run.get('validity') or run.get('status')}" + (f" — {reason}" if reason else ""),
            traceback="",
            traceback_ansi="",
        )
    inp, out = int(usage.get("input_tokens") or 0), int(usage.get("output_tokens") or 0)
    return EvalSample(
        id=str(run["key"]),
        epoch=1,
        input=str(run.get("prompt") or ""),
        target="",
        messages=messages,
        output=last_output or ModelOutput(model=model),
        scores=scores or None,
        metadata=metadata,
        events=events,
        model_usage={
            model: ModelUsage(
                input_tokens=inp,
                output_tokens=out,
                total_tokens=inp + out,
                input_tokens_cache_read=usage.get("cached_input_tokens"),
                input_tokens_cache_write=usage.get("cache_write_tokens"),
                total_cost=run.get("cost_usd"),
            )
        }
        if inp or out
        else {},
        started_at=run.get("started_at"),
        completed_at=run.get("finished_at"),
        total_time=run.get("duration"),
        uuid=run.get("uuid"),
        error=error,
    )


def _tool_event(command: Mapping[str, Any], when: dt.datetime | None) -> ToolEvent:
    code = command.get("exit_code")
    return ToolEvent(
        timestamp=when or dt.datetime.now(dt.UTC),
        id=str(command.get("call_id") or ""),
        function="bash",
        arguments={"command": str(command.get("command") or "")},
        result=str(command.get("output") or ""),
        metadata={"exit_code": code, "timed_out": bool(command.get("timed_out"))},
    )


# -- the log --------------------------------------------------------------------------------------


def model_name(sut: Mapping[str, Any]) -> str:
    """``provider/model`` as Inspect names models: the upstream kind and the endpoint's model id."""
    model = sut.get("model") or {}
    return f"{model.get('upstream') or 'none'}/{model.get('model') or model.get('slug') or 'unknown'}"


def build_log(campaign: Mapping[str, Any], runs: Sequence[Mapping[str, Any]]) -> EvalLog:
    """The campaign's ``EvalLog``: its spec, plan, one sample per run, results and stats.

    inspect_ai's message converters are coroutines; a caller already inside an event loop (an
    async view, a test driving a browser) gets them run on a thread of their own.
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(_build(campaign, runs))
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, _build(campaign, runs)).result()


async def _build(campaign: Mapping[str, Any], runs: Sequence[Mapping[str, Any]]) -> EvalLog:
    sut = campaign.get("sut") or {}
    framework = sut.get("framework") or {}
    model = model_name(sut)
    samples = [await _sample(campaign, run, model) for run in runs]
    created = campaign.get("created_at") or dt.datetime.now(dt.UTC).isoformat()
    spec = EvalSpec(
        eval_id=str(campaign["uuid"]),
        run_id=str(campaign["uuid"]),
        created=created,
        task=f"overeager/{campaign['kind']}",
        task_id=str(campaign["uuid"]),
        task_display_name=str(campaign["name"]),
        task_description=str(campaign.get("kind_label") or ""),
        task_args=dict(campaign.get("params") or {}),
        dataset=EvalDataset(
            name=str(campaign.get("dataset") or campaign["kind"]),
            samples=len(samples),
            sample_ids=[s.id for s in samples],
        ),
        sandbox=None,
        model=model,
        model_base_url=(sut.get("model") or {}).get("base_url") or None,
        solver=str(framework.get("slug") or ""),
        solver_args=dict(framework.get("options") or {}),
        config=EvalConfig(epochs=1),
        metadata={
            "overeager": {
                "campaign": {k: campaign.get(k) for k in ("uuid", "name", "kind", "status", "backend", "matrix")},
                "sut": sut,
                "dataset": campaign.get("dataset_info"),
                "oracle_versions": campaign.get("oracle_versions"),
                "costs": campaign.get("costs"),
                "software": campaign.get("software"),
            }
        },
        packages={"overeager": str((campaign.get("software") or {}).get("overeager", ""))},
    )
    plan = EvalPlan(
        name=str(framework.get("slug") or "agent"),
        steps=[
            EvalPlanStep(
                solver=str(framework.get("slug") or "agent"),
                params={"adapter": framework.get("adapter"), **dict(framework.get("options") or {})},
            )
        ],
    )
    status = {"complete": "success", "stopped": "cancelled", "failed": "error"}.get(str(campaign["status"]), "started")
    usage: dict[str, ModelUsage] = {}
    for s in samples:
        for name, u in s.model_usage.items():
            usage[name] = usage[name] + u if name in usage else u
    return EvalLog(
        status=status,  # type: ignore[arg-type]
        eval=spec,
        plan=plan,
        results=_results(campaign, samples),
        stats=EvalStats(
            started_at=campaign.get("started_at") or created,
            completed_at=campaign.get("finished_at") or "",
            model_usage=usage,
        ),
        error=EvalError(message=str(campaign.get("error")), traceback="", traceback_ansi="")
        if status == "error"
        else None,
        samples=samples,
    )


def _results(campaign: Mapping[str, Any], samples: Iterable[EvalSample]) -> EvalResults:
    samples = list(samples)
    keys = SUITE_KEYS if campaign.get("benchmark") == "underspecbench" else SNARE_KEYS
    scored = [s for s in samples if s.scores]
    results = []
    for key in keys:
        column = [float(s.scores[key].as_float()) for s in scored if s.scores and key in s.scores]
        # The rate as sampled (the runs' own mean): the uniform-mix rate is on the campaign page.
        results.append(
            EvalScore(
                name=key,
                scorer=key,
                scored_samples=len(column),
                unscored_samples=len(samples) - len(column),
                metrics={"mean": EvalMetric(name="mean", value=sum(column) / len(column))} if column else {},
            )
        )
    return EvalResults(total_samples=len(samples), completed_samples=len(scored), scores=results)


def write_log(log: EvalLog, out_dir: Path) -> Path:
    """Write ``log`` into ``out_dir`` under Inspect's file naming (``<created>_<task>_<id>.eval``)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    stamp = log.eval.created.replace(":", "-").replace("+", "-")[:25]
    task = log.eval.task.replace("/", "-")
    path = out_dir / f"{stamp}_{task}_{log.eval.eval_id[:8]}.eval"
    write_eval_log(log, str(path))
    return path
