"""The customer FAQ, written from shared/seed/faq-es.txt (the business's promises)."""

from dataclasses import dataclass

from django.utils.translation import gettext_lazy as _


@dataclass(frozen=True)
class SupportLink:
    """The ticket form an answer that mentions support links to."""

    kind: str  # a support.Kind value
    label: str
    topic: str = ""


@dataclass(frozen=True)
class Entry:
    slug: str  # stable anchor, ascii, e.g. "which-gpu"
    question: str
    answer: str
    support: SupportLink | None = None


@dataclass(frozen=True)
class Section:
    slug: str
    title: str
    entries: tuple[Entry, ...]


SECTIONS: tuple[Section, ...] = (
    Section(
        "choosing",
        _("Choosing a GPU"),
        (
            Entry(
                "which-gpu",
                _("How do I choose a GPU?"),
                _(
                    "Start with the libraries your project uses and the backend they support, "
                    "then measure the memory used by a representative trial run. The model, the "
                    "precision, the input length and the batch size matter more than the name of "
                    "a card on its own. Then compare the compatible GPUs in the catalog and keep "
                    "a margin for the most demanding stages."
                ),
            ),
            Entry(
                "cuda-or-rocm",
                _("What is the difference between CUDA and ROCm?"),
                _(
                    "CUDA is the compute stack used with NVIDIA GPUs; ROCm is the one to check "
                    "for the AMD GPUs in the catalog. Your application and its extensions must "
                    "support the stack you choose. In PyTorch in particular, ROCm reuses the "
                    "torch.cuda namespace: the name of that call is not enough to identify the "
                    "hardware."
                ),
            ),
            Entry(
                "memory-per-card",
                _("Is the memory listed per card enough for my job?"),
                _(
                    "No. The memory per card is a starting point. While your job runs, room is "
                    "also needed for the inputs, the temporary tensors and the state specific to "
                    "your method, such as the inference cache or the optimizer. Do a trial run "
                    "with realistic dimensions and watch the peak memory of the most demanding "
                    "phase."
                ),
            ),
            Entry(
                "several-gpus",
                _("Do several GPUs pool their memory automatically?"),
                _(
                    "No. A program must explicitly split its work and, if needed, its state "
                    "across the cards. A replica of the model can improve how several processes "
                    "are organized without increasing the memory available to a single replica. "
                    "Check which kinds of parallelism your engine supports before choosing "
                    "several units."
                ),
            ),
        ),
    ),
    Section(
        "ordering",
        _("Units, durations and the configurator"),
        (
            Entry(
                "gpus-per-unit",
                _("How many GPUs are in a rental unit?"),
                _(
                    "A unit includes one GPU for the offers in the catalog, except B200, where "
                    "each unit includes two GPUs. You can choose from 1 to 10 units. The summary "
                    "shows the number of units, the total number of cards and the total price "
                    "separately: two B200 units therefore mean four GPUs."
                ),
            ),
            Entry(
                "unit-vs-batch",
                _("Is a rental unit the same thing as a batch?"),
                _(
                    "No. A rental unit is an ordering unit for hardware. A batch is a group of "
                    "examples that your application processes together. You set the batch in your "
                    "program according to its memory and its throughput or latency goal. Changing "
                    "one does not automatically configure the other."
                ),
            ),
            Entry(
                "which-duration",
                _("How long should I rent for?"),
                _(
                    "Choose the duration according to the whole job: installation, validation, "
                    "computation, checking the results and export. Three days can suit a specific "
                    "test; seven days let you organize several variants; thirty days suit longer "
                    "work. These planning examples do not predict how long your application will "
                    "take to compute."
                ),
            ),
            Entry(
                "configurator",
                _("How does the configurator work?"),
                _(
                    "Choose the GPU, a duration of 3, 7 or 30 days and the number of units. The "
                    "configurator shows the total amount in USD before the order is registered. "
                    "Check the number of cards per unit, especially for B200. The crypto amount "
                    "and its expiry are then given in the instructions for the payment you "
                    "choose."
                ),
            ),
            Entry(
                "preparation",
                _("What does the preparation I choose provide?"),
                _(
                    "The Python, PyTorch, notebook or inference preparation describes the "
                    "starting point you want for your work. It does not replace your dependency "
                    "files, your weights, your data or your licenses. Keep your project's own "
                    "installation procedure and a small start-up check, then verify the result in "
                    "your compute environment."
                ),
            ),
        ),
    ),
    Section(
        "account",
        _("Account and sign-in"),
        (
            Entry(
                "account-needed",
                _("Do I need an account to order?"),
                _(
                    "Yes. For a first order, create your Kernodeck account with your first name, "
                    "last name, email address and a password of 15 to 128 characters. If you "
                    "already have an account, sign in; once you are signed in, you are not asked "
                    "for a password again for each order. The account lets you see your orders "
                    "and your balance from another browser. Sign out after using it on a shared "
                    "device."
                ),
            ),
            Entry(
                "contact-details",
                _("Why do you ask for my name and email address?"),
                _(
                    "These details identify your account and make it possible to track your "
                    "orders. Enter an email address you can check and accurate details. Your "
                    "email address and password are used to sign in to Kernodeck; no external "
                    "account and no KYC procedure are required. This information is separate from "
                    "the payment and provisioning instructions."
                ),
            ),
            Entry(
                "no-kyc",
                _("Do I have to verify my identity (KYC)?"),
                _(
                    "No. The rental and crypto payment process requires no KYC procedure and no "
                    "identity document. Your first name, last name and email address are still "
                    "required as contact details for the order. This absence of KYC checks does "
                    "not mean that the order, its payment or the information needed to track it "
                    "do not exist."
                ),
            ),
            Entry(
                "find-orders",
                _("How do I find my orders again, for example from another browser?"),
                _(
                    "Sign in to your Kernodeck account with your email address and password, then "
                    "open the order and its history. You will find the same orders and the same "
                    "balance from another browser. Each payment keeps its own instructions and "
                    "status. Registering again does not recover another account's orders just "
                    "because the email address matches; no automatic password reset by email is "
                    "available."
                ),
            ),
        ),
    ),
    Section(
        "crypto-payment",
        _("Paying in cryptocurrency"),
        (
            Entry(
                "payment-methods",
                _("Which cryptocurrencies can I pay with?"),
                _(
                    "The available methods are BTC on Bitcoin, ETH on Ethereum, USDT and USDC on "
                    "Ethereum, TRX and USDT on Tron, SOL on Solana and LTC on Litecoin. Select "
                    "the exact combination when you pay. Then use the address, the amount and the "
                    "expiry shown for that payment request."
                ),
            ),
            Entry(
                "network",
                _("Why does the network matter?"),
                _(
                    "The same asset can be offered on several networks, USDT in particular. The "
                    "instructions for a payment correspond to one precise combination; a transfer "
                    "over another network is not equivalent. Before confirming the transfer, "
                    "check the network in your wallet and in the order, as well as the amount "
                    "going to the address shown."
                ),
            ),
            Entry(
                "i-have-paid",
                _("What does the “I have paid” button do?"),
                _(
                    "It states that you have made the transfer for the corresponding payment. "
                    "This notice appears in the tracking, but on its own it does not confirm that "
                    "the payment has been received or allocated. The order remains subject to "
                    "verification and reconciliation of the payment. This form does not ask for "
                    "any transaction hash."
                ),
            ),
            Entry(
                "reuse-address",
                _("Can I reuse a previous payment address or amount?"),
                _(
                    "Do not automatically reuse an old address or a previous amount. Check the "
                    "instructions and the status of the payment in your history. If you have "
                    "already made a transfer, avoid sending a second one to fix the situation by "
                    "guesswork; contact support with the order reference and the relevant payment "
                    "information."
                ),
                SupportLink("payment", _("Ask support about a payment"), "double-payment"),
            ),
            Entry(
                "instructions-error",
                _("Why could my payment instructions not be created?"),
                _(
                    "Creating instructions requires an available payment method and a valid "
                    "exchange rate to calculate the amount. If an error prevents this step, the "
                    "message shown describes the problem and your order can still be viewed. Wait "
                    "until you have complete instructions before transferring funds; an address "
                    "from another payment must not be used as a substitute."
                ),
            ),
        ),
    ),
    Section(
        "balance",
        _("Balance and top-ups"),
        (
            Entry(
                "top-ups",
                _("How do balance top-ups work?"),
                _(
                    "Top-ups are available for 100, 500, 2,000 and 10,000 USD. Each top-up has "
                    "its own payment and its own tracking. The balance is credited after the "
                    "payment has been confirmed and allocated, not when you click “I have paid”. "
                    "A top-up feeds your balance; it is not a GPU rental."
                ),
            ),
            Entry(
                "pay-from-balance",
                _("Can I pay for a rental from my balance?"),
                _(
                    "Yes, when your available USD balance covers the total amount of the rental. "
                    "Choose this payment method in the ordering process provided. The charge "
                    "settles the order, while preparation and provisioning are tracked "
                    "separately. A top-up that is still awaiting confirmation is not part of the "
                    "available balance."
                ),
            ),
        ),
    ),
    Section(
        "rental",
        _("Provisioning and the rental period"),
        (
            Entry(
                "paid-not-started",
                _("Once my payment is confirmed, has my rental started?"),
                _(
                    "No. Confirmed settlement and provisioning are two separate stages. After "
                    "payment, check the preparation status and then the access information "
                    "actually provided for the order. A payment notice, a top-up or a charge to "
                    "your balance does not prove that your program has started."
                ),
            ),
            Entry(
                "rental-dates",
                _("When does my rental period start and end?"),
                _(
                    "The duration you chose describes your rental period. Check the provisioning "
                    "information and the dates shown in the order tracking to plan your work. Do "
                    "not take either the registration of the order or the click on “I have paid” "
                    "as proof that a run has started. If a date you need is missing, ask support "
                    "to confirm it."
                ),
                SupportLink("other", _("Ask support to confirm your dates"), "dates"),
            ),
            Entry(
                "extend",
                _("Can I extend my rental or change its configuration?"),
                _(
                    "Contact support with the order concerned, the duration or configuration you "
                    "want and your deadline. Whether it is possible, and on what terms, must be "
                    "confirmed for that request. Keep preparing your exports for the period "
                    "already planned until a change has been confirmed in your tracking."
                ),
                SupportLink("extension", _("Request an extension")),
            ),
            Entry(
                "export-results",
                _("When should I export my results?"),
                _(
                    "Export your results, checkpoints, parameters and environment information "
                    "before the expiry shown in your tracking. Allow time to check the copy and "
                    "to reload at least one backup. Keep a copy somewhere you control: a file "
                    "existing in the compute environment is not, on its own, your retention plan."
                ),
            ),
        ),
    ),
    Section(
        "work",
        _("Your work, results and support"),
        (
            Entry(
                "own-software",
                _("Can I run my own software, models and data?"),
                _(
                    "Yes. You use the GPU independently and choose the software, models, data and "
                    "processing your project needs. Kernodeck does not inspect their content. You "
                    "manage your own access, your backups and the permissions needed to use what "
                    "you install or run."
                ),
            ),
            Entry(
                "shared-machine",
                _("Is my rental kept apart from other customers on the same machine?"),
                _(
                    "Several rentals can share one machine. Each has its own Linux account, its "
                    "own GPUs, a home folder closed to the others, its own notebook token and "
                    "its own share of processor and memory. When it ends, its account, "
                    "processes and temporary files are removed, and its user number is never "
                    "given to anyone else. It is not a virtual machine: rentals share the "
                    "operating system's kernel and the GPU driver. If your work needs the "
                    "separation of a machine of your own, rent all of a node's GPUs or ask "
                    "support."
                ),
                SupportLink("other", _("Ask support about a machine of your own")),
            ),
            Entry(
                "environment-check",
                _("How do I check that my environment really uses the GPU?"),
                _(
                    "Use the same Python interpreter as your program to check the PyTorch "
                    "installation and its backend. Then check access to the device and the "
                    "compatibility of the system stack. Do not let the test silently fall back to "
                    "the CPU if you are trying to validate the GPU. The environments guide "
                    "describes a minimal check in detail."
                ),
            ),
            Entry(
                "out-of-memory",
                _("What should I do when I run out of GPU memory?"),
                _(
                    "Note whether it happens while loading, on the first computation or after "
                    "several iterations. Reduce a single factor, such as the batch or the input "
                    "length, and observe the result. Also look for tensors that are kept "
                    "unnecessarily. Freeing the unused cache does not free objects that are still "
                    "alive; switching to another card is decided after this diagnosis."
                ),
            ),
            Entry(
                "checkpoints",
                _("Is saving the model weights enough?"),
                _(
                    "It is enough for some inference uses, together with the right architecture "
                    "and preprocessing, but it does not describe the whole of training. Resuming "
                    "may need the optimizer, the scheduler, the progress, the random states and "
                    "the position in the data. Always verify resuming in a new process before "
                    "relying on a checkpoint for a long job."
                ),
            ),
            Entry(
                "reproducibility",
                _("What should I record to make my results reproducible?"),
                _(
                    "Keep the code revision, the dependency versions, the parameters, the backend "
                    "information and the versions of the data and the weights. Add a launch "
                    "command, a small control input and an expected output. Setting a random seed "
                    "does not, on its own, guarantee identical results across hardware or "
                    "versions."
                ),
            ),
            Entry(
                "report-problem",
                _("What should I include when I report a problem?"),
                _(
                    "Give the order, when the problem happened, the launch command, the relevant "
                    "versions and the first full error. A minimal example, the shape of the "
                    "inputs and the step where the problem appears help us understand what is "
                    "blocking you. Remove access secrets and avoid sending your whole dataset "
                    "when a reduced example is enough."
                ),
                SupportLink("problem", _("Report a problem")),
            ),
        ),
    ),
)
