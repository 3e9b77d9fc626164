"""The FAQ after an order: paying in cryptocurrency, the balance, provisioning and the rental
period, and the customer's own work, results and support.
"""

from django.utils.translation import gettext_lazy as _

from kernodeck.guides.faq.entries import Entry, Section, SupportLink

SECTIONS: tuple[Section, ...] = (
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
