# ruff: noqa: E501 -- the corpus holds real tool output verbatim; its long lines are the point.
"""The removal corpus: every listed secret shape goes, ordinary technical output stays."""

import pytest

from kernodeck.support.redaction import REMOVED, redact

# Fake secrets of the right shapes (none is real).
HF = "hf_" + "aBcDeFgHiJkLmNoPqRsTuVwXyZ012345"
OPENAI = "sk-proj-" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6"
ANTHROPIC = "sk-ant-api03-" + "x" * 40
GITHUB = "ghp_" + "1234567890abcdefghijABCDEFGHIJ123456"
GITHUB_PAT = "github_pat_" + "11ABCDEFG0123456789_" + "a" * 40
AWS = "AKIA" + "IOSFODNN7EXAMPLE"
SLACK = "xoxb-" + "123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx"
SLACK_HOOK = "https://hooks.slack.com/services/" + "T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX"
JWT = (
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9"
    ".eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIn0"
    ".SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
)
KD = "kd_" + "Zm9vYmFyYmF6cXV4cXV1eHF1dXhxdXV4cXV1eHF1dXg"
SEED12 = "abandon ability able about above absent absorb abstract absurd abuse access accident"
SEED24 = " ".join(
    [
        "legal",
        "winner",
        "thank",
        "year",
        "wave",
        "sausage",
        "worth",
        "useful",
        "legal",
        "winner",
        "thank",
        "yellow",
    ]
    * 2
)
PRIVATE_KEY = (
    "-----BEGIN OPENSSH PRIVATE KEY-----\n"
    "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n"
    "QyNTUxOQAAACDp0lhh0dummydummydummydummydummydummydummyAAAA==\n"
    "-----END OPENSSH PRIVATE KEY-----"
)
RSA_KEY = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7dummy\n-----END RSA PRIVATE KEY-----"
XPRV = (
    "xprv9s21ZrQH143K3QTDL4LXw2F7HEK3wJUD2nW2nRk4stbPy6cq3jPPqjiChkVvvNKmPGJxWUtg6LnF5kej"
    "MRNNU3TGtRBeJgk33yuGBxrMPHi"
)

POSITIVES = [
    ("huggingface_token", f"export HF_HUB_URL=x; huggingface-cli login --token {HF}", HF),
    ("huggingface_token", f"from_pretrained('m', use_auth_token='{HF}')", HF),
    ("openai_key", f"client = OpenAI(api_key={OPENAI!r})", OPENAI),
    ("openai_key", f"key {ANTHROPIC} here", ANTHROPIC),
    ("github_token", f"git clone https://{GITHUB}@github.com/me/repo", GITHUB),
    ("github_token", f"GH={GITHUB_PAT}", GITHUB_PAT),
    ("aws_key", f"aws configure set aws_access_key_id {AWS}", AWS),
    ("slack_token", f"SLACK={SLACK}", SLACK),
    ("slack_token", f"curl -X POST {SLACK_HOOK}", SLACK_HOOK),
    ("jwt", f"Authorization: Bearer {JWT}", JWT),
    ("kernodeck_token", f"curl -H 'Authorization: Bearer {KD}' /api/v1/orders", KD),
    ("seed_phrase_unchecked", f"my wallet words: {SEED12}", SEED12),
    ("seed_phrase", f"{SEED24}\n", SEED24),
    ("private_key", f"here is my key\n{PRIVATE_KEY}\nthanks", "b3BlbnNzaC1rZXktdjEAAAAABG5v"),
    ("private_key", RSA_KEY, "MIIEowIBAAKCAQEA7dummy"),
    ("extended_private_key", f"wallet {XPRV}", XPRV),
    ("url_password", "postgres://admin:S3cr3tPass@db.internal:5432/app", "S3cr3tPass"),
    (
        "url_password",
        "pip install --index-url https://me:hunter2hunter@pypi.example/",
        "hunter2hunter",
    ),
    ("assignment", "DB_PASSWORD=correcthorse42", "correcthorse42"),
    ("assignment", 'password = "p4ssw0rd!"', "p4ssw0rd!"),
    ("assignment", "token: abcdef123456", "abcdef123456"),
    ("assignment", "client_secret='very-secret-value'", "very-secret-value"),
    ("assignment", "WANDB_API_KEY=0123456789abcdef0123", "0123456789abcdef0123"),
    ("assignment", "db:\n  password: correcthorse\n", "correcthorse"),
    ("assignment", "BD_CONTRASEÑA=caballocorrecto", "caballocorrecto"),
    ("assignment", "mi contraseña: Caballo42 por si acaso", "Caballo42"),
    ("assignment", "error al entrar con token: ab12cd34ef56", "ab12cd34ef56"),
    ("assignment", "https://x.example/cb?code=1&token=ab12cd34ef56&state=2", "ab12cd34ef56"),
    # Beside the look-alikes of ordinary errors (see NEGATIVES), the secrets still go.
    ("assignment", "password: correcthorse # prod\n", "correcthorse"),
    ("assignment", "contraseña: caballocorrecto\n", "caballocorrecto"),
    ("assignment", "Token: 40961234abcd\n", "40961234abcd"),
    ("assignment", "hf_token: 12345678abcdef\n", "12345678abcdef"),
    ("assignment", "secret: S3cr3t/Value+x\n", "S3cr3t/Value+x"),
    ("assignment", "api_key: 'required-0123abcd'\n", "required-0123abcd"),
    ("assignment", "mi contraseña: Incorrecta99, ¿la cambio?", "Incorrecta99"),
    ("assignment", "my password: Expired2024 and it still works", "Expired2024"),
    ("command_password", "mysql -h db -u root -pS3cretPw app", "S3cretPw"),
]


@pytest.mark.parametrize(("kind", "text", "secret"), POSITIVES)
def test_each_listed_secret_shape_is_removed(kind, text, secret):
    result = redact(text)
    assert secret not in result.text
    assert REMOVED in result.text
    assert kind in {f.kind for f in result.findings}


def test_a_numbered_seed_phrase_is_removed():
    numbered = "\n".join(f"{i}. {w}" for i, w in enumerate(SEED12.split(), 1))
    result = redact(numbered)
    assert "abandon" not in result.text and "accident" not in result.text
    assert [f.kind for f in result.findings] == ["seed_phrase_unchecked"]


def test_eleven_bip39_words_are_not_a_seed_phrase():
    text = " ".join(SEED12.split()[:11])
    assert redact(text).text == text


def test_the_rentals_own_secrets_are_removed_when_known():
    token = "nb-7f3a9c2e1d"
    result = redact(f"jupyter at https://h:8888/?token={token} fails", known_secrets=[token])
    assert token not in result.text
    assert {f.kind for f in result.findings} >= {"rental_secret"}


def test_the_report_counts_each_kind():
    result = redact(f"{HF} and {HF.replace('a', 'b')} and DB_PASSWORD=zzzzzzzz")
    assert result.as_list() == [
        {"kind": "huggingface_token", "label": "a Hugging Face token", "count": 2},
        {"kind": "assignment", "label": "a password, token or secret assignment", "count": 1},
    ]
    assert result.text == f"{REMOVED} and {REMOVED} and DB_PASSWORD={REMOVED}"


def test_code_that_merely_names_a_token_is_left_alone():
    code = (
        "token = tokenizer(text)\n"
        "secret = None\n"
        "password = getpass.getpass()\n"
        "api_key = os.environ['KEY']\n"
        "self.token = config.token\n"
    )
    assert redact(code).text == code


TRACEBACK = """Traceback (most recent call last):
  File "/home/user/train.py", line 88, in <module>
    main()
  File "/home/user/train.py", line 71, in main
    tokens = tokenizer(batch["text"], padding=True, truncation=True, max_length=2048)
  File "/opt/conda/lib/python3.11/site-packages/transformers/tokenization_utils_base.py", line 2858, in __call__
    encodings = self._call_one(text=text, text_pair=text_pair, **all_kwargs)
  File "/opt/conda/lib/python3.11/site-packages/torch/nn/modules/module.py", line 1518, in _wrapped_call_impl
    return self._call_impl(*args, **kwargs)
RuntimeError: Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!
"""

PIP_FREEZE = """accelerate==0.25.0
certifi==2023.11.17
filelock==3.13.1
huggingface-hub==0.19.4
Jinja2==3.1.2
numpy==1.26.2
nvidia-cublas-cu12==12.1.3.1
nvidia-cudnn-cu12==8.9.2.26
safetensors==0.4.1
sentencepiece==0.1.99
tokenizers==0.15.0
torch==2.1.2
tqdm==4.66.1
transformers==4.36.2
triton==2.1.0
"""

CUDA_OOM = (
    "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a "
    "total capacity of 79.15 GiB of which 1.02 GiB is free. Process 12345 has 78.12 GiB memory "
    "in use. Of the allocated memory 74.50 GiB is allocated by PyTorch, and 2.11 GiB is reserved "
    "by PyTorch but unallocated. If reserved but unallocated memory is large try setting "
    "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See documentation "
    "for Memory Management  (https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)\n"
)

NVIDIA_SMI = """Tue Dec  1 02:10:44 2026
+-----------------------------------------------------------------------------------------+
| NVIDIA-SMI 550.54.15              Driver Version: 550.54.15      CUDA Version: 12.4     |
|-----------------------------------------+------------------------+----------------------+
| GPU  Name                 Persistence-M | Bus-Id          Disp.A | Volatile Uncorr. ECC |
| Fan  Temp   Perf          Pwr:Usage/Cap |           Memory-Usage | GPU-Util  Compute M. |
|                                         |                        |               MIG M. |
|=========================================+========================+======================|
|   0  NVIDIA H100 80GB HBM3          On  |   00000000:18:00.0 Off |                    0 |
| N/A   34C    P0             71W /  700W |   78123MiB /  81559MiB |      0%      Default |
|                                         |                        |             Disabled |
+-----------------------------------------+------------------------+----------------------+

+-----------------------------------------------------------------------------------------+
| Processes:                                                                              |
|  GPU   GI   CI        PID   Type   Process name                              GPU Memory |
|        ID   ID                                                               Usage      |
|=========================================================================================|
|    0   N/A  N/A     12345      C   /opt/conda/bin/python                        78110MiB |
+-----------------------------------------------------------------------------------------+
"""

TORCH_CONFIG = """PyTorch built with:
  - GCC 9.3
  - C++ Version: 201703
  - Intel(R) oneAPI Math Kernel Library Version 2022.2-Product Build 20220804 for Intel(R) 64 architecture applications
  - Intel(R) MKL-DNN v3.1.1 (Git Hash 64f6bcbcbab628e96f33a62c3e975f8535a7bde4)
  - OpenMP 201511 (a.k.a. OpenMP 4.5)
  - LAPACK is enabled (usually provided by MKL)
  - NNPACK is enabled
  - CPU capability usage: AVX512
  - CUDA Runtime 12.1
  - NVCC architecture flags: -gencode;arch=compute_50,code=sm_50;-gencode;arch=compute_60,code=sm_60;-gencode;arch=compute_70,code=sm_70;-gencode;arch=compute_75,code=sm_75;-gencode;arch=compute_80,code=sm_80;-gencode;arch=compute_86,code=sm_86;-gencode;arch=compute_90,code=sm_90
  - CuDNN 8.9.2
  - Magma 2.6.1
  - Build settings: BLAS_INFO=mkl, BUILD_TYPE=Release, CUDA_VERSION=12.1, CUDNN_VERSION=8.9.2, CXX_COMPILER=/opt/rh/devtoolset-9/root/usr/bin/c++, CXX_FLAGS= -D_GLIBCXX_USE_CXX11_ABI=0 -fabi-version=11 -fvisibility-inlines-hidden -DUSE_PTHREADPOOL -DNDEBUG -DUSE_KINETO -DLIBKINETO_NOROCTRACER -DUSE_FBGEMM -DUSE_QNNPACK -DUSE_PYTORCH_QNNPACK -DUSE_XNNPACK -DSYMBOLICATE_MOBILE_DEBUG_HANDLE -O2 -fPIC -Wall -Wextra -Werror=return-type -Werror=non-virtual-dtor -Werror=bool-operation -Wnarrowing -Wno-missing-field-initializers -Wno-type-limits -Wno-array-bounds -Wno-unknown-pragmas -Wno-unused-parameter -Wno-unused-function -Wno-unused-result -Wno-strict-overflow -Wno-strict-aliasing -Wno-stringop-overflow -Wno-psabi -Wno-error=pedantic -Wno-error=old-style-cast -Wno-invalid-partial-specialization -Wno-unused-private-field -Wno-aligned-new -Wno-unused-but-set-variable -Wno-maybe-uninitialized -fno-math-errno -fno-trapping-math -Werror=format -Werror=cast-function-type -Wno-stringop-overflow, LAPACK_INFO=mkl, PERF_WITH_AVX=1, PERF_WITH_AVX2=1, PERF_WITH_AVX512=1, TORCH_DISABLE_GPU_ASSERTS=ON, TORCH_VERSION=2.1.2, USE_CUDA=ON, USE_CUDNN=ON, USE_EXCEPTION_PTR=1, USE_GFLAGS=OFF, USE_GLOG=OFF, USE_MKL=ON, USE_MKLDNN=ON, USE_MPI=OFF, USE_NCCL=1, USE_NNPACK=ON, USE_OPENMP=ON, USE_ROCM=OFF,
"""

LAUNCH = (
    "torchrun --nproc_per_node=2 train.py --model meta-llama/Llama-2-7b-hf --batch-size 8 "
    "--max-seq-len 4096 --lr 2e-5 --output-dir /workspace/out\n"
)

NEGATIVES = {
    "traceback": TRACEBACK,
    "pip freeze": PIP_FREEZE,
    "cuda out of memory": CUDA_OOM,
    "nvidia-smi": NVIDIA_SMI,
    "torch config": TORCH_CONFIG,
    "launch command": LAUNCH,
    "prose": (
        "It happens after several iterations: the loss is fine at first, then the memory "
        "grows until the process dies. I tried a smaller batch and the same thing happens."
    ),
    "prosa": (
        "Ocurre después de varias iteraciones: la pérdida va bien al principio y luego la "
        "memoria crece hasta que el proceso muere. Probé con un lote más pequeño y pasa lo mismo."
    ),
    # Ordinary errors that name a token, a password or a secret without holding one.
    "syntax error": "  File \"train.py\", line 3\nValueError: invalid token: expected ')'\n",
    "invalid token message": "Invalid token: please check the token you pasted and try again.",
    "path with secret:": "python /home/ana/secret:project/train.py --epochs 3\n",
    "error de sintaxis": "ValueError: token no válido: se esperaba ')' en la línea 3\n",
    "mensaje de token": "Token inválido: por favor, revise el token pegado e inténtelo de nuevo.",
    "contraseña incorrecta": "Error de autenticación: la contraseña: no coincide, pruebe otra vez.",
    "ruta con secret:": "python /home/ana/secret:proyecto/entrenar.py --epocas 3\n",
    "tokenizer warning": (
        "Token indices sequence length is longer than the specified maximum sequence length "
        "for this model (4127 > 4096). Running this sequence through the model will result "
        "in indexing errors\n"
    ),
    "query string without secrets": "GET /v1/models?limit=10&offset=20&sort=name HTTP/1.1\n",
    # The same errors with the name at the start of a line (where a configuration key sits),
    # a state word after it, counts, placeholders, type hints and paths, in both languages.
    "token: at a line's start": "token: expected ')'\n",
    "Token: please": "Token: please check the token you pasted and try again.\n",
    "Password: incorrect": "Password: incorrect, try again\npassword: incorrect\n",
    "Contraseña: incorrecta": "Contraseña: incorrecta, inténtelo de nuevo\ncontraseña: incorrecta\n",
    "contraseña olvidada": "contraseña: olvidada, ¿cómo la recupero?\n",
    "Token: inválido": "Token: inválido\nEl token: caducado, genere otro\n",
    "api_key: required": "Error: api_key: required\napi_key: required\n",
    "placeholder with spaces": "api_key: <your key>\nclave: <tu clave>\n",
    "type hints": "class Config:\n    secret_key: bytes\n    token: str = ''\n",
    "max_token count": "max_token: 4096\ngeneration_config.max_token=2048\n",
    "token count": "Token: 4096\ntokens: 1.2M, loss: 0.345\n",
    "tqdm progress": "token: 100%|██████████| 5/5 [00:01<00:00,  3.21it/s]\n",
    "docker secret path": "secret: /run/secrets/hf_token\nsecret:/run/secrets/hf\n",
    "relative path after secret:": "python secret:project/train.py --epochs 3\n",
    "ruta relativa tras secret:": "python secret:proyecto/entrenar.py --epocas 3\n",
    "mysql password from a variable": "mysql -h db -u root -p$MYSQL_PWD app\n",
    "huggingface 401": (
        "HTTPError: 401 Client Error: Unauthorized for url: "
        "https://huggingface.co/api/whoami-v2 (token: invalid)\n"
    ),
    "error de autenticación": "Error: el token: no coincide con el esperado\nToken: caducado\n",
}


@pytest.mark.parametrize("name", sorted(NEGATIVES))
def test_technical_output_passes_unchanged(name):
    result = redact(NEGATIVES[name])
    assert result.text == NEGATIVES[name]
    assert result.findings == ()


def test_a_secret_inside_a_traceback_goes_and_the_rest_stays():
    text = TRACEBACK + f"HF_TOKEN={HF}\n"
    result = redact(text)
    assert result.text == TRACEBACK + f"HF_TOKEN={REMOVED}\n"


HOSTILE = {
    "dashed identifier": "a-" * 10_000,
    "long word": "a" * 20_000,
    "schemes": "ab://" * 4_000,
    "users": "a://" + "b:" * 9_000,
    "assignments": "token=" * 3_000,
    "numbered words": "1. abandon " * 1_800,
    "jwt heads": "eyJ" * 6_000,
    "unterminated key": "-----BEGIN PRIVATE KEY-----" + "x" * 19_000,
    "path parts failing at the end": "token=" + "1/" * 9_000 + "!",
    "count failing at the end": "token: " + "1" * 19_000 + "%x",
    "dashes before BEGIN": "\u2014" * 20_000 + "BEGIN",
    "hyphens before BEGIN": "-" * 20_000 + "BEGIN PRIVATE KEY",
    "options without a program": " -p x -u a:b --password y" * 800,
    "url-encoded separators": "password%22%3A%22" * 1_200,
    "base64 lines": "b3BlbnNzaC1rZXktdjE" + ("A" * 70 + "\n") * 250 + "!",
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_input_is_handled_without_catastrophic_backtracking(name):
    # How the time grows with the input (linear, not quadratic) is measured by
    # bench/redaction.py; here an alarm only stops a pattern that would run for ever.
    import signal

    def give_up(signum, frame):
        raise TimeoutError(f"redact() still running on {name!r}: catastrophic backtracking")

    previous = signal.signal(signal.SIGALRM, give_up)
    signal.setitimer(signal.ITIMER_REAL, 60)  # a hang guard, not a speed target
    try:
        redact(HOSTILE[name])  # returns, or the alarm fails the test
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def test_a_100_kb_message_completes_and_its_secrets_go():
    # Logs, prose in both languages, word lists and secrets, 100 KB: removal must just
    # finish (the alarm is a hang guard, not a speed target) and still find the secrets.
    import signal

    chunk = (
        TRACEBACK
        + PIP_FREEZE
        + CUDA_OOM
        + NEGATIVES["prosa"]
        + "\n"
        + NEGATIVES["prose"]
        + "\n"
        + " ".join(SEED12.split()[:11])
        + "\n1. abandon 2) ability | able, about\n"
        + "token: "
        + "a1" * 40
        + "\n"
    )
    text = (chunk * (100_000 // len(chunk) + 1))[:100_000]
    text += f"\nHF_TOKEN={HF}\nmy wallet words: {SEED24}\n"

    def give_up(signum, frame):
        raise TimeoutError("redact() still running on a 100 KB message")

    previous = signal.signal(signal.SIGALRM, give_up)
    signal.setitimer(signal.ITIMER_REAL, 60)
    try:
        result = redact(text)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    assert HF not in result.text and SEED24 not in result.text
    assert "a1" * 40 not in result.text
    assert TRACEBACK in result.text and NEGATIVES["prosa"] in result.text
