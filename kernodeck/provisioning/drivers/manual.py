"""The manual driver: every step is an operator's action in the provisioning desk.

It does nothing on machines, so the clock can always call it: preparation waits for an
operator, access is delivered through the desk's form, and release and extension are
recorded for the operator to carry out (the desk lists what each slot runs).
"""

from datetime import datetime

from kernodeck.provisioning.drivers.base import (
    Access,
    NodeHealth,
    NodeRef,
    RentalSpec,
    StepResult,
)


class ManualDriver:
    code = "manual"

    def prepare(self, rental: RentalSpec) -> StepResult:
        return StepResult(done=False, detail="An operator prepares the machine.")

    def deliver(self, rental: RentalSpec) -> Access | None:
        return None

    def extend(self, rental: RentalSpec, until: datetime) -> StepResult:
        return StepResult(done=True, detail="Nothing to change on the machine.")

    def release(self, rental: RentalSpec) -> StepResult:
        return StepResult(
            done=True, detail="Slots freed; an operator removes the account and its data."
        )

    def inspect(self, node: NodeRef) -> NodeHealth:
        return NodeHealth(ok=True, detail="Not inspected automatically (manual driver).")
