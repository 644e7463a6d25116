"""SFT on exported trajectories with TRL (on a CPU, with the tiny local model of :mod:`training.tiny`).

:func:`load_sft_dataset` reads SFT JSONL files — ours (``compoworld export sft``) and the published
CompoWorld ones, which share the layout — into a Hugging Face ``datasets.Dataset`` with the
columns TRL's ``SFTTrainer`` reads: ``messages`` and a per-row ``tools`` (kept as a JSON string,
since every row has its own tool schemas), optionally rendered with the tools of GRPO's environment and
cut after the first assistant turns (a warm-up for GRPO). Both files' types are normalised: tool-call
arguments become objects (either file may hold JSON strings), ``task_id`` a string; call ids, the tool
messages' ``name`` and ``reasoning_content`` are kept. Each message is stored as a ``datasets.Json``
value, so a message keeps exactly its own keys and a call exactly its own arguments (an Arrow struct
would give every call the union of all calls' argument names, as nulls).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from hub.surfaces import GATEWAY_NAMES
from training.config import SFTTraining
from training.tiny import SEED, TINY, rendered_texts, tiny_model, tiny_tokenizer


def read_sft(paths: Iterable[str | Path]) -> list[dict[str, Any]]:
    rows = []
    for path in paths:
        with open(path, encoding="utf-8") as handle:
            for number, line in enumerate(handle, 1):
                if not line.strip():
                    continue
                record = json.loads(line)
                if "messages" not in record:
                    raise ValueError(f"{path}:{number}: not an SFT record (no 'messages')")
                rows.append(record)
    return rows


def _message(message: dict[str, Any]) -> dict[str, Any]:
    """One message as ``SFTTrainer`` reads it, whichever file it comes from."""
    out: dict[str, Any] = {"role": message["role"], "content": message.get("content") or ""}
    if isinstance(message.get("reasoning_content"), str):
        out["reasoning_content"] = message["reasoning_content"]
    if message.get("tool_calls"):
        out["tool_calls"] = [_call(c) for c in message["tool_calls"]]
    if message.get("tool_call_id") is not None:
        out["tool_call_id"] = str(message["tool_call_id"])
    if message.get("name"):
        out["name"] = message["name"]
    return out


def _call(call: dict[str, Any]) -> dict[str, Any]:
    function = {"name": call["function"]["name"], "arguments": _arguments(call["function"].get("arguments"))}
    return {**({"id": str(call["id"])} if call.get("id") is not None else {}), "type": "function", "function": function}


def _arguments(value: Any) -> dict[str, Any]:
    """Arguments as an object, from an object or a JSON string; what is neither becomes ``{}``."""
    if isinstance(value, str):
        try:
            parsed = json.loads(value or "{}")
        except ValueError:
            return {}
        return parsed if isinstance(parsed, dict) else {}
    return value if isinstance(value, dict) else {}


def _tool_names(tools: Any) -> set[str]:
    return {t.get("function", t).get("name", "") for t in tools or [] if isinstance(t, dict)}


def _first_turns(messages: list[dict[str, Any]], turns: int) -> list[dict[str, Any]]:
    """The conversation cut right after its ``turns``-th assistant message."""
    seen = 0
    for index, message in enumerate(messages):
        if message["role"] == "assistant":
            seen += 1
            if seen == turns:
                return messages[: index + 1]
    return messages


def sft_rows(
    paths: Iterable[str | Path] | str | Path, tools: list[dict[str, Any]] | None = None, turns: int | None = None
) -> list[dict[str, Any]]:
    """SFT records as ``SFTTrainer`` rows (``messages``, ``tools`` as JSON, ``task_id``).

    ``tools`` replaces the tool specs of gateway-surface rows (those offering exactly the four meta-tools): pass
    :func:`training.grpo.env_tool_schemas` so a warm-up renders the very prompt GRPO's environment will render.
    ``turns`` keeps each conversation only up to its ``turns``-th assistant message (a warm-up on the first calls).
    """
    files = [paths] if isinstance(paths, str | Path) else list(paths)
    rows = []
    for record in read_sft(files):
        messages = [_message(m) for m in record["messages"]]
        if turns is not None:
            messages = _first_turns(messages, turns)
        row_tools = record.get("tools", [])
        if tools is not None and _tool_names(row_tools) == GATEWAY_NAMES:
            row_tools = tools
        rows.append(
            {
                "messages": messages,
                "tools": json.dumps(row_tools),
                "task_id": str(record.get("meta", {}).get("task_id", "")),
            }
        )
    return rows


def sft_dataset(rows: list[dict[str, Any]]) -> Any:
    """Rows of :func:`sft_rows` as a ``datasets.Dataset`` (each message a ``datasets.Json`` value)."""
    import datasets

    features = datasets.Features(
        {
            "messages": datasets.List(datasets.Json()),
            "tools": datasets.Value("string"),
            "task_id": datasets.Value("string"),
        }
    )
    return datasets.Dataset.from_list(rows, features=features)


def load_sft_dataset(
    paths: Iterable[str | Path] | str | Path,
    held_out: float = 0.0,
    seed: int = 0,
    tools: list[dict[str, Any]] | None = None,
    turns: int | None = None,
) -> Any:
    """A ``datasets.Dataset`` (or a train/test ``DatasetDict`` split by task) ready for ``SFTTrainer``."""
    import datasets

    rows = sft_rows(paths, tools=tools, turns=turns)
    dataset = sft_dataset(rows)
    if not held_out:
        return dataset
    import random

    tasks = sorted({r["task_id"] for r in rows})
    random.Random(seed).shuffle(tasks)
    test_tasks = set(tasks[: max(1, int(len(tasks) * held_out))])
    return datasets.DatasetDict(
        {
            "train": dataset.filter(lambda r: r["task_id"] not in test_tasks),
            "test": dataset.filter(lambda r: r["task_id"] in test_tasks),
        }
    )


def train_sft(config: SFTTraining, tools: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """Run TRL's ``SFTTrainer`` with ``config``; ``model="tiny"`` builds the local smoke-test model. Returns the losses.

    ``tools`` renders every row with these tool schemas instead of its own (for gateway rows, the schemas of
    GRPO's environment: :func:`training.grpo.env_tool_schemas`, ``compoworld train sft --env-tools``),
    ``config.turns`` keeps the first assistant turns of each conversation only and ``config.assistant_only_loss``
    trains on the assistant's tokens only: together, a warm-up that teaches a model the first tool calls of the
    very prompts ``train_grpo`` will show it.
    """
    from trl import SFTConfig, SFTTrainer

    model, data, cpu, learning_rate = config.model, config.data, config.cpu, config.learning_rate
    output_dir = str(config.output)
    rows = sft_rows(data, tools=tools, turns=config.turns)
    dataset = sft_dataset(rows)
    if model == TINY:
        # The tokenizer learns the whole conversations (tool results too), even when the training keeps a few turns.
        tokenizer = tiny_tokenizer(rendered_texts(sft_rows(data, tools=tools)))
        network: Any = tiny_model(tokenizer, seed=SEED)
        learning_rate = max(learning_rate, 3e-3)
        cpu = True
    else:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(model)
        network = AutoModelForCausalLM.from_pretrained(model)
        cpu = cpu or not torch.cuda.is_available()  # TRL's bf16 default needs a GPU
    peft_config = None
    if config.lora:
        from peft import LoraConfig

        peft_config = LoraConfig(
            r=16,
            lora_alpha=32,
            lora_dropout=0.05,
            task_type="CAUSAL_LM",
            target_modules=["q_proj", "k_proj", "v_proj", "o_proj"],
        )
    args = SFTConfig(
        output_dir=output_dir,
        max_steps=config.max_steps,
        num_train_epochs=config.epochs,
        per_device_train_batch_size=config.batch_size,
        learning_rate=learning_rate,
        logging_steps=5,
        report_to=[],
        max_length=config.max_length,
        use_cpu=cpu,
        save_strategy="no",
        assistant_only_loss=config.assistant_only_loss,
        gradient_checkpointing=model != TINY,  # TRL's default; a tiny model has no memory to save
    )
    trainer = SFTTrainer(
        model=network, args=args, train_dataset=dataset, processing_class=tokenizer, peft_config=peft_config
    )
    trainer.train()
    trainer.save_model(output_dir)
    losses = [float(h["loss"]) for h in trainer.state.log_history if "loss" in h]
    return {"losses": losses, "examples": len(dataset), "output_dir": output_dir}
