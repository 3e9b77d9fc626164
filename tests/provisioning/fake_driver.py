"""A driver for tests: records every call and does what the test asks, on no machine."""

from kernodeck.provisioning.drivers.base import (
    Access,
    DriverError,
    NodeHealth,
    NodeRef,
    RentalSpec,
    StepResult,
)


class FakeDriver:
    code = "ssh"
    calls: list[tuple] = []
    fail_prepare: DriverError | None = None
    fail_release: DriverError | None = None
    socket: str = ""  # the Unix socket the delivered service listens on, if any

    def prepare(self, rental: RentalSpec) -> StepResult:
        self.calls.append(("prepare", rental.reference, rental.allocation, rental.ssh_public_keys))
        if self.fail_prepare is not None:
            raise self.fail_prepare
        return StepResult(done=True)

    def deliver(self, rental: RentalSpec) -> Access | None:
        self.calls.append(("deliver", rental.reference))
        node = rental.allocation[0].node
        url = "http://127.0.0.1:8888/lab?token=drv-secret" if self.socket else ""
        return Access(
            host=node.host,
            port=node.port,
            user=rental.user,
            url=url,
            token="drv-secret",
            socket=self.socket,
        )

    def extend(self, rental, until):
        self.calls.append(("extend", rental.reference, until))
        return StepResult(done=True)

    def release(self, rental: RentalSpec) -> StepResult:
        self.calls.append(("release", rental.reference, rental.allocation))
        if self.fail_release is not None:
            raise self.fail_release
        return StepResult(done=True)

    def inspect(self, node: NodeRef) -> NodeHealth:
        self.calls.append(("inspect", node.name))
        return NodeHealth(ok=True, detail="8 GPUs", gpus_seen=node.gpu_count)
