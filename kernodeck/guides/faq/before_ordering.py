"""The FAQ before an order: choosing a GPU, units, durations and the configurator, the account."""

from django.utils.translation import gettext_lazy as _

from kernodeck.guides.faq.entries import Entry, Section

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
)
