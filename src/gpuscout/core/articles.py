"""The three source articles gpuscout starts from, and every constant it takes from them.

"The articles" anywhere in gpuscout means the three Chinese blog posts cited in
:data:`ARTICLES`. They describe a system (a Keras benchmark, a seed model, a cost table and a
checklist) but several of their numbers are wrong; :attr:`Article.errors` says which, and
``gpuscout audit`` checks such claims against physics and the catalog. What gpuscout keeps
from them is here, each constant with the article it comes from, so no other module restates
one. The articles' cost table is data, with its source: ``catalog/data/v1/articles_cost.csv``
(read by :func:`gpuscout.catalog.articles_cost.articles_cost`).

No imports beyond the standard library: the CLI's help and the workload registry read this.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Article:
    """One source article: how to cite it, what it claims, and what it gets wrong."""

    key: str  # the seed file's number, as the project's documents refer to it
    title: str  # as published (Chinese)
    title_en: str  # our translation
    summary: str  # what it is about, in one line
    claims: tuple[str, ...]
    errors: tuple[str, ...] = ()

    def cite(self) -> str:
        if not self.title:
            return f"article {self.key}, untitled ({self.title_en})"
        return f"article {self.key}, '{self.title}' ('{self.title_en}')"


ARTICLES: tuple[Article, ...] = (
    Article(
        key="000",
        title="RTX 4090 vs A100：消费级与专业级GPU实战评测",  # noqa: RUF001 (as published)
        title_en="RTX 4090 vs A100: consumer and data-center GPUs tested in practice",
        summary="the seed MLP, the RTX 4090 against the A100, and the four-question checklist",
        claims=(
            "the seed model: Input(780) -> Dense(128, relu) -> Dropout(0.2) -> "
            "Dense(10, softmax), Adam, sparse categorical cross-entropy, GPU memory growth, "
            "a TensorBoard callback",
            "the RTX 4090 (16,384 CUDA cores, 24 GB, 83 TFLOPS FP32, about $1,600) suits "
            "experiments and LoRA on 7B models; the A100 brings NVLink (600 GB/s), ECC, MIG "
            "and TF32 for production",
            "the checklist: 10B+ parameters? a run over 24 h? multi-tenant isolation? an "
            "inference SLA of 99.99%? Three or more 'yes' -> A100, otherwise RTX 4090",
        ),
        errors=("the RTX 4090 does have TF32 tensor cores (Ada); the article says it lacks them",),
    ),
    Article(
        key="001",
        title="性能对比测试：不同GPU上TensorFlow训练速度排行",  # noqa: RUF001 (as published)
        title_en="Performance comparison: TensorFlow training speed ranked across GPUs",
        summary="the ResNet-50 ranking against the RTX 3090, multi-GPU scaling and the cost table",
        claims=(
            "a ranking: ResNet-50 on ImageNet, batch 256, mixed precision; epoch 87 s on an "
            "RTX 3090, 62 s RTX 4090, 49 s A100, 31 s H100; speed relative to the RTX 3090",
            "tf.function + GradientTape, XLA, tf.data prefetch; GPU utilization under 60% "
            "means the input pipeline starves the GPU",
            "scaling: 4 x RTX 3090 over PCIe reach 68% of linear, 8 x A100 over NVLink 92%",
            "a cost table for a job of 1000 GPU-hours on an RTX 3090 (1 x 3090 $0.50/h, "
            "4 x 3090 $2.00/h, 1 x A100 $1.80/h, 4 x A100 NVLink $7.20/h)",
            "recommendations by segment: individuals RTX 4090, SMEs cloud T4/A10, large "
            "models and production A100 or newer, the future H100",
        ),
        errors=(
            "A100 FP32 is 19.5 TFLOPS, not 9.7 (that is FP64)",
            "its epoch times imply 15k-41k images/s, more than each GPU's peak tensor "
            "throughput at ~24.6 GFLOP per training image; published figures are ~10x lower",
            "the cost table's hours do not follow from its own speeds and scaling "
            "(4 x 3090 at 68%: 368 h, not 300 h)",
        ),
    ),
    Article(
        key="002",
        title="",  # the copy we have starts with its text: no title
        title_en="a guide to choosing between the RTX 4090 and the A100",
        summary="the checklist again, memory fit (LoRA on 7B) and the used RTX 3090",
        claims=(
            "the same four-question checklist and rule as article 000",
            "LoRA fine-tuning of a 7B model fits a 24 GB card; 10B+ models need more",
            "a used RTX 3090 costs about 60% of an RTX 4090",
        ),
        errors=("the A100's FP16 tensor rate is 312 TFLOPS dense, not ~1000",),
    ),
)
BY_KEY = {a.key: a for a in ARTICLES}


def citation() -> str:
    """One line naming the three articles, for reports and help texts."""
    return "; ".join(a.cite() for a in ARTICLES)


def sources() -> list[str]:
    """One line per article: the citation and what it is about, for a report's sources."""
    return [f"{a.cite()}: {a.summary}" for a in ARTICLES]


# --- S2, article 000: the seed model -------------------------------------------------------
SEED_MLP_INPUTS = 780  # Input(780): not MNIST's 784; the articles name no data set
SEED_MLP_HIDDEN = 128
SEED_MLP_DROPOUT = 0.2
SEED_MLP_CLASSES = 10

# --- S1, article 001: the reference benchmark ------------------------------------------------
REFERENCE_GPU = "rtx-3090"  # relative speeds ("vs RTX 3090") and the cost example are against it
BENCHMARK_WORKLOAD = "resnet50"  # ResNet-50 on ImageNet ...
BENCHMARK_BATCH = 256  # ... batch 256 per GPU ...
BENCHMARK_PRECISION = "mixed_float16"  # ... mixed precision
PIPELINE_STARVED_BELOW = 0.6  # "GPU utilization under 60% means the pipeline starves it"

# --- S6, article 001: scaling efficiencies quoted ------------------------------------------
SCALING_4X_RTX_3090_PCIE = 0.68
SCALING_8X_A100_NVLINK = 0.92
A100_SPEEDUP_VS_3090 = 1.78  # from the ranking: 87 s / 49 s

# --- S8, article 001: the cost example (its rows: catalog/data/v1/articles_cost.csv) --------
COST_EXAMPLE_GPU_HOURS = 1000.0  # "1000 GPU-hours" on REFERENCE_GPU

# --- S9, articles 000 and 002: the checklist -----------------------------------------------
CHECKLIST_QUESTIONS = (
    "Is the model larger than 10B parameters?",
    "Does a single training run take more than 24 hours?",
    "Is multi-tenant isolation or fine-grained GPU sharing needed?",
    "Does inference have an SLA of 99.99% or more?",
)
CHECKLIST_PARAMS = 10e9  # question 1's threshold
CHECKLIST_RUN_HOURS = 24.0  # question 2's threshold
CHECKLIST_YES_FOR_DATACENTER = 3  # "three or more yes"
CHECKLIST_DATACENTER = "A100/H100 (data-center class)"
CHECKLIST_DEFAULT = "RTX 4090"
# The catalog ids each answer stands for, to find it among a full recommendation's options.
CHECKLIST_GPU_IDS = {
    CHECKLIST_DEFAULT: ("rtx-4090",),
    CHECKLIST_DATACENTER: ("a100-", "h100-"),  # id prefixes
}
