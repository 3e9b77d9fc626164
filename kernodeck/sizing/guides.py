"""The practical guides behind the FAQ's technical answers (R21-R23): sizing, environment
check, out-of-memory diagnosis, checkpoints, reproducibility and exports before expiry.

Text is English msgids translated in this app's catalogue; commands and code stay as they are.
"""

from dataclasses import dataclass, field

from django.utils.translation import gettext_lazy as _


@dataclass(frozen=True)
class Block:
    heading: str = ""
    paragraphs: tuple = ()
    code: str = ""


@dataclass(frozen=True)
class Guide:
    slug: str
    title: str
    summary: str
    blocks: tuple[Block, ...]
    faq: tuple[str, ...] = field(default_factory=tuple)  # FAQ entries that link here
    example: str = ""  # a file of sizing/standalone shown and offered for download


_GUIDES = (
    Guide(
        "sizing",
        _("Estimate the GPU memory of your job"),
        _("How much memory a model needs, part by part, and which GPU of the catalog fits it."),
        (
            Block(
                _("What takes memory"),
                (
                    _(
                        "The weights take the number of parameters times the bytes of the "
                        "precision: 4 in fp32, 2 in bf16 or fp16, 1 in fp8 or int8, half a byte "
                        "in int4. An 8-billion-parameter model in bf16 needs about 15 GiB for "
                        "its weights alone."
                    ),
                    _(
                        "Inference adds the key/value cache: 2 x layers x key/value heads x head "
                        "dimension x bytes for every token of every sequence, prompt and "
                        "generated tokens included. Long contexts and large batches make it "
                        "grow until it is larger than the model."
                    ),
                    _(
                        "Training adds gradients, the optimizer's state and the activations "
                        "kept for the backward pass. With mixed-precision AdamW the model states "
                        "alone take about 16 bytes per trained parameter; LoRA and QLoRA freeze "
                        "the base weights and train small adapters instead."
                    ),
                    _(
                        "Every GPU also holds the CUDA or ROCm context and library workspaces, "
                        "usually between 0.3 and 1 GiB."
                    ),
                ),
            ),
            Block(
                _("Use the estimator, then measure"),
                (
                    _(
                        "The estimator gives a starting point from published formulas and "
                        "measurements. Keep a margin of at least 20 percent for the most "
                        "demanding stage, then confirm with a short trial of your real program on "
                        "the card and read its peak with kernodeck-envcheck --measure."
                    ),
                    _(
                        "Several GPUs do not pool their memory. A model larger than one card "
                        "runs on several only if the program shards it (FSDP, ZeRO-3, tensor or "
                        "pipeline parallelism); a replica per card does not give one replica "
                        "more memory."
                    ),
                ),
                "kernodeck-envcheck --measure train.py --estimate-gib 21.5 -- --batch-size 4",
            ),
        ),
        faq=("which-gpu", "memory-per-card", "several-gpus"),
    ),
    Guide(
        "environment-check",
        _("Check that your environment really uses the GPU"),
        _("One file to run with your program's interpreter; it refuses to pass on the CPU."),
        (
            Block(
                _("Run it with the same interpreter"),
                (
                    _(
                        "Download kernodeck-envcheck.py and run it with the Python of your "
                        "program (the one in your virtual environment or container). It prints "
                        "the interpreter, the Python and PyTorch versions, the backend, the "
                        "visible-device variables and every GPU with its memory and capability, "
                        "then multiplies two matrices on each GPU and checks the result."
                    ),
                    _(
                        "ROCm builds of PyTorch reuse torch.cuda: the check reads "
                        "torch.version.hip and torch.version.cuda to name the real backend. Ask "
                        "it to confirm what you rented with --expect-backend and --expect-gpus."
                    ),
                ),
                "python kernodeck-envcheck.py\n"
                "python kernodeck-envcheck.py --expect-backend rocm --expect-gpus 4\n"
                "python kernodeck-envcheck.py --json > envcheck.json",
            ),
            Block(
                _("Never a silent fallback to the CPU"),
                (
                    _(
                        "A CPU-only build of PyTorch, a GPU the process cannot see, another "
                        "backend or another number of GPUs than expected end the check with a "
                        "non-zero exit status and one line that says why. Put it at the start "
                        "of your job script so a wrong environment stops before hours of "
                        "computing on the CPU."
                    ),
                ),
            ),
        ),
        faq=("environment-check", "cuda-or-rocm"),
    ),
    Guide(
        "out-of-memory",
        _("Diagnose an out-of-memory error"),
        _("When it appears tells you which part is too large."),
        (
            Block(
                _("When does it happen?"),
                (
                    _(
                        "While loading: the weights do not fit; use a lower precision, "
                        "quantization or a program that shards the model. On the first step: "
                        "activations or the KV cache are too large for this batch and length. "
                        "After many steps: something keeps growing, usually tensors kept alive "
                        "by your own code."
                    ),
                ),
            ),
            Block(
                _("Change one factor at a time"),
                (
                    _(
                        "Halve the batch or the sequence length and compare the peak with "
                        "torch.cuda.max_memory_allocated(). Changing one thing at a time tells "
                        "you which part grows; enable gradient checkpointing if the activations "
                        "dominate."
                    ),
                    _(
                        "Look for tensors kept alive: a loss accumulated without .item() or "
                        ".detach(), outputs appended to a list, references held by a logger. "
                        "torch.cuda.empty_cache() returns unused cached blocks to the driver, "
                        "but it does not free tensors that are still referenced."
                    ),
                    _(
                        "Choose another GPU only after this diagnosis: the estimator shows "
                        "which card fits the measured peak with a margin."
                    ),
                ),
                "import torch\n"
                "torch.cuda.reset_peak_memory_stats()\n"
                "loss = step(batch)            # one representative step\n"
                "print(torch.cuda.max_memory_allocated() / 2**30, 'GiB')",
            ),
        ),
        faq=("out-of-memory",),
    ),
    Guide(
        "checkpoints",
        _("Checkpoints that really resume"),
        _("Save everything the next step depends on, and prove it in a new process."),
        (
            Block(
                _("What a checkpoint must hold"),
                (
                    _(
                        "The weights alone are not a training checkpoint. Save the optimizer "
                        "state, the learning-rate scheduler, the step counter, the random states "
                        "(Python, PyTorch, the data-shuffling generator, and the GPU's when you "
                        "use one) and the position in the data."
                    ),
                    _(
                        "Verify resuming in a new process before you rely on it: stop a short "
                        "run, resume it from the file, and compare the result with an "
                        "uninterrupted run. The example below ends bit-for-bit identical on the "
                        "CPU; on a GPU, non-deterministic kernels may need "
                        "torch.use_deterministic_algorithms(True)."
                    ),
                ),
                "python checkpoint_example.py --steps 40 --out full.json\n"
                "python checkpoint_example.py --steps 40 --stop-after 15 --checkpoint ck.pt\n"
                "python checkpoint_example.py --steps 40 --resume ck.pt --out resumed.json\n"
                "diff <(grep sha256 full.json) <(grep sha256 resumed.json) && echo identical",
            ),
        ),
        faq=("checkpoints",),
        example="checkpoint_example.py",
    ),
    Guide(
        "reproducibility",
        _("Record what makes a result reproducible"),
        _("A manifest written next to your results, by the environment check."),
        (
            Block(
                _("What to record"),
                (
                    _(
                        "The code revision, the versions of every dependency, the parameters, "
                        "the backend and driver, the versions (hashes) of the data and the "
                        "weights, the launch command, and a small control input with its "
                        "expected output. kernodeck-envcheck --manifest writes all of it to one "
                        "JSON file."
                    ),
                    _(
                        "A fixed random seed alone does not make results identical across "
                        "hardware, drivers or library versions: kernels and reduction orders "
                        "differ. Compare the control output within a tolerance and keep the "
                        "manifest with the results."
                    ),
                ),
                "python kernodeck-envcheck.py --manifest manifest.json \\\n"
                "    --hash data/train.parquet --hash model.safetensors \\\n"
                '    --param lr=3e-4 --param seed=1234 --command "python train.py --lr 3e-4"',
            ),
        ),
        faq=("reproducibility", "report-problem"),
    ),
    Guide(
        "exports",
        _("Export your results before the rental ends"),
        _("What to copy, when, and how to check the copy."),
        (
            Block(
                _("Plan the export with the job"),
                (
                    _(
                        "The end date is in your order's tracking, and Kernodeck reminds you "
                        "ahead of it. Plan the export as a step of the job: results, "
                        "checkpoints, logs, the manifest and the environment check's report."
                    ),
                    _(
                        "Copy to storage you control, then check the copy: compare hashes and "
                        "reload at least one checkpoint from it. A file that exists only in the "
                        "rented environment is not a backup; after the end it is gone."
                    ),
                    _(
                        "If you need more time, ask support for an extension with the order, "
                        "the duration you want and your deadline; until it is confirmed in the "
                        "tracking, keep to the planned end."
                    ),
                ),
                "sha256sum results/* checkpoints/* > SHA256SUMS\n"
                "rsync -av --partial results checkpoints SHA256SUMS manifest.json \\\n"
                "    you@your-host:run-42/\n"
                "ssh you@your-host 'cd run-42 && sha256sum -c SHA256SUMS'",
            ),
        ),
        faq=("export-results",),
    ),
)

GUIDES: dict[str, Guide] = {guide.slug: guide for guide in _GUIDES}
GUIDE_FOR_FAQ: dict[str, Guide] = {slug: guide for guide in _GUIDES for slug in guide.faq}
