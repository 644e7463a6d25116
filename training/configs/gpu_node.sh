#!/usr/bin/env bash
# Example: one 8-GPU node (80 GB each). SFT a Qwen3 model on verified trajectories with LoRA, then
# GRPO on generated tasks with the CFRR reward. Adjust MODEL, sizes and steps to your hardware.
# Launch multi-GPU with accelerate (`pip install accelerate`); TRL reads the usual env variables.
set -euo pipefail
MODEL=${MODEL:-Qwen/Qwen3-8B}
OUT=${OUT:-runs/gpu}
mkdir -p "$OUT"

# 1. Tasks and verified trajectories (CPU is enough for this part).
compoworld tasks generate -n 5000 --seed 1 --workers 16 -o "$OUT/tasks.jsonl"
compoworld run --tasks "$OUT/tasks.jsonl" --agent oracle --surface gateway --parallel 16 --run oracle \
  --store "$OUT/runs.db"
compoworld export sft oracle --store "$OUT/runs.db" -o "$OUT/sft.jsonl" --held-out 0.05

# 2. SFT (LoRA) on the gateway trajectories, rendered with the tool schemas GRPO's environment shows (--env-tools).
accelerate launch --num_processes 8 -m training.cli train sft --model "$MODEL" --data "$OUT/sft.jsonl" \
  --output "$OUT/sft-model" --epochs 2 --learning-rate 1e-4 --batch-size 4 --lora --env-tools

# 3. GRPO with tool calls into task worlds; rollouts of one task form the CFRR group.
compoworld tasks generate -n 2000 --seed 2 --workers 16 -o "$OUT/rl-tasks.jsonl"
accelerate launch --num_processes 8 -m training.cli train grpo --model "$OUT/sft-model" \
  --tasks "$OUT/rl-tasks.jsonl" --output "$OUT/grpo-model" --max-steps 500 --num-generations 8 \
  --max-completion-length 4096 --reward cfrr --lora

# 4. Evaluate the trained policy behind an OpenAI-compatible server (e.g. vLLM) on held-out tasks.
#    vllm serve "$OUT/grpo-model" --port 8000 --enable-auto-tool-choice --tool-call-parser hermes &
#    compoworld run --tasks "$OUT/tasks.jsonl" --limit 500 --agent openai --model "$OUT/grpo-model" \
#      --base-url http://localhost:8000/v1 --surface gateway --rollouts 4 --parallel 32 --run eval
