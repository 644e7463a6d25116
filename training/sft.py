"""SFT on exported trajectories with TRL, and a tiny local model for the CPU smoke path.

:func:`load_sft_dataset` reads SFT JSONL files — ours (``compoworld export sft``) and the published
CompoWorld ones, which share the layout — into a Hugging Face ``datasets.Dataset`` with the
columns TRL's ``SFTTrainer`` reads: ``messages`` and a per-row ``tools`` (kept as a JSON string,
since every row has its own tool schemas). :func:`tiny_model` builds a small Qwen3-architecture
model from a config and a byte-level BPE tokenizer trained on the data itself, with TRL's bundled
Qwen3 chat template — no download — so the whole SFT path runs on a CPU in seconds.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

TINY = "tiny"


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
    out: dict[str, Any] = {"role": message["role"], "content": message.get("content") or ""}
    if message.get("tool_calls"):
        out["tool_calls"] = [
            {
                "type": "function",
                "function": {"name": c["function"]["name"], "arguments": _arguments(c["function"].get("arguments"))},
            }
            for c in message["tool_calls"]
        ]
    return out


def _arguments(value: Any) -> dict[str, Any]:
    if isinstance(value, str):
        try:
            parsed = json.loads(value or "{}")
        except ValueError:
            return {}
        return parsed if isinstance(parsed, dict) else {}
    return value if isinstance(value, dict) else {}


def load_sft_dataset(paths: Iterable[str | Path] | str | Path, held_out: float = 0.0, seed: int = 0) -> Any:
    """A ``datasets.Dataset`` (or a train/test ``DatasetDict`` split by task) ready for ``SFTTrainer``."""
    import datasets

    files = [paths] if isinstance(paths, str | Path) else list(paths)
    rows: list[dict[str, Any]] = [
        {
            "messages": [_message(m) for m in r["messages"]],
            "tools": json.dumps(r.get("tools", [])),
            "task_id": str(r.get("meta", {}).get("task_id", "")),
        }
        for r in read_sft(files)
    ]
    dataset = datasets.Dataset.from_list(rows)
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


def tiny_tokenizer(texts: Iterable[str], vocab_size: int = 2000) -> Any:
    """A byte-level BPE tokenizer trained on ``texts``, with TRL's Qwen3 chat template."""
    import trl
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tokenizer = Tokenizer(models.BPE(unk_token=None))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    special = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size, special_tokens=special, initial_alphabet=pre_tokenizers.ByteLevel.alphabet()
    )
    tokenizer.train_from_iterator(texts, trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tokenizer, eos_token="<|im_end|>", pad_token="<|endoftext|>")
    # Tool-call markers must be ordinary (non-special) added tokens for TRL's tool-call parsing.
    fast.add_tokens(["<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>", "<think>", "</think>"])
    fast.chat_template = (Path(trl.__file__).parent / "chat_templates" / "qwen3.jinja").read_text()
    return fast


def tiny_model(tokenizer: Any, hidden: int = 64, layers: int = 2) -> Any:
    """A small Qwen3-architecture causal LM sized to ``tokenizer`` (random weights)."""
    from transformers import Qwen3Config, Qwen3ForCausalLM

    config = Qwen3Config(
        vocab_size=len(tokenizer),
        hidden_size=hidden,
        intermediate_size=hidden * 2,
        num_hidden_layers=layers,
        num_attention_heads=2,
        num_key_value_heads=1,
        head_dim=hidden // 2,
        max_position_embeddings=8192,
        tie_word_embeddings=True,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    return Qwen3ForCausalLM(config)


def train_sft(
    model: str,
    data: list[str | Path],
    output_dir: str | Path,
    max_steps: int = -1,
    epochs: float = 1.0,
    learning_rate: float = 2e-5,
    batch_size: int = 2,
    max_length: int = 4096,
    lora: bool = False,
    cpu: bool = False,
) -> dict[str, Any]:
    """Run TRL's ``SFTTrainer``; ``model="tiny"`` builds the local smoke-test model. Returns the losses."""
    from trl import SFTConfig, SFTTrainer

    dataset = load_sft_dataset(data)
    if model == TINY:
        tokenizer = tiny_tokenizer(json.dumps(r) for r in read_sft(data))
        network: Any = tiny_model(tokenizer)
        learning_rate = max(learning_rate, 3e-3)
        cpu = True
    else:
        from transformers import AutoModelForCausalLM, AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(model)
        network = AutoModelForCausalLM.from_pretrained(model)
    peft_config = None
    if lora:
        from peft import LoraConfig

        peft_config = LoraConfig(
            r=16,
            lora_alpha=32,
            lora_dropout=0.05,
            task_type="CAUSAL_LM",
            target_modules=["q_proj", "k_proj", "v_proj", "o_proj"],
        )
    args = SFTConfig(
        output_dir=str(output_dir),
        max_steps=max_steps,
        num_train_epochs=epochs,
        per_device_train_batch_size=batch_size,
        learning_rate=learning_rate,
        logging_steps=5,
        report_to=[],
        max_length=max_length,
        use_cpu=cpu,
        save_strategy="no",
    )
    trainer = SFTTrainer(
        model=network, args=args, train_dataset=dataset, processing_class=tokenizer, peft_config=peft_config
    )
    trainer.train()
    trainer.save_model(str(output_dir))
    losses = [float(h["loss"]) for h in trainer.state.log_history if "loss" in h]
    return {"losses": losses, "examples": len(dataset), "output_dir": str(output_dir)}
