"""The SSH test hosts themselves: the loopback fallback serves like a namespace host, and
everything a lab made is gone after it, also when the code inside it failed."""

import errno
import ipaddress
import os
import socket
import subprocess
from pathlib import Path

import pytest

from tests.sshhosts import SshLab, ssh_lab_unavailable

pytestmark = pytest.mark.skipif(bool(ssh_lab_unavailable()), reason=str(ssh_lab_unavailable()))


def netns_names():
    done = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=False)
    return {line.split()[0] for line in done.stdout.splitlines() if line.strip()}


def test_loopback_hosts_when_namespaces_are_not_used():
    with SshLab(hosts=1, use_namespaces=False) as lab:
        host = lab.hosts[0]
        assert (lab.mode, host.address, host.namespace) == ("loopback", "127.0.0.1", None)
        done = subprocess.run(
            [*host.ssh_argv("root", lab.operator_key_path), "echo ready"],
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert (done.returncode, done.stdout) == (0, "ready\n"), done.stderr
        host.cut()
        refused = subprocess.run(
            [*host.ssh_argv("root", lab.operator_key_path), "true"],
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert refused.returncode == 255


def test_each_host_has_its_own_account_database_and_sshd_with_pam():
    with SshLab(hosts=2) as lab:
        if not lab.isolate:
            pytest.skip("this machine cannot give a test host namespaces of its own")
        first, second = lab.hosts
        account = lab.account_prefix + "probe"
        made = subprocess.run(
            [
                *first.ssh_argv("root", lab.operator_key_path),
                f"useradd -M {account} && id -u {account}",
            ],
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert made.returncode == 0, made.stderr
        assert first.account(account).pw_uid == int(made.stdout)
        with pytest.raises(KeyError):
            second.account(account)
        machine = Path("/etc/passwd").read_text().splitlines()
        assert not any(line.startswith(account + ":") for line in machine)
        for host in lab.hosts:
            config = subprocess.run(
                ["/usr/sbin/sshd", "-T", "-f", str(host.base / "sshd_config")],
                capture_output=True,
                text=True,
                check=True,
            ).stdout
            assert "usepam yes" in config.splitlines()
        # Their agents take uids from ranges apart.
        assert first.uid_min != second.uid_min
        lab.reset()
        with pytest.raises(KeyError):
            first.account(account)


def test_a_failing_lab_leaves_no_namespace_account_link_or_file():
    with pytest.raises(RuntimeError, match="the test failed"), SshLab(hosts=1) as lab:
        base = lab.base
        names = set(lab.namespaces)
        account = lab.account_prefix + "leftover"
        subprocess.run(["useradd", "--no-create-home", account], check=True)
        raise RuntimeError("the test failed")

    assert not (names & netns_names())
    assert not Path(base).exists()
    assert not any(
        line.startswith(account + ":") for line in Path("/etc/passwd").read_text().splitlines()
    )
    links = subprocess.run(["ip", "-br", "link"], capture_output=True, text=True).stdout
    assert f"kd{os.getpid()}0h" not in links


def routes() -> str:
    return subprocess.run(["ip", "route"], capture_output=True, text=True, check=True).stdout


def route_to(address: str) -> tuple[int, str]:
    done = subprocess.run(["ip", "route", "get", address], capture_output=True, text=True)
    return done.returncode, done.stdout + done.stderr


def test_a_cut_host_is_unreachable_at_once_and_never_by_the_default_route():
    with SshLab(hosts=1) as lab:
        if lab.mode != "namespaces":
            pytest.skip("network namespaces are not available here")
        host = lab.hosts[0]
        catch_all = lab.catch_all
        assert catch_all and f"unreachable {catch_all}" in routes()
        assert host.address in _addresses_of(catch_all)
        _code, path = route_to(host.address)
        assert f"dev {host.link}" in path

        host.cut()
        code, path = route_to(host.address)
        assert code != 0 and "No route to host" in path, path  # the catch-all, not a dead link
        with socket.socket() as sock:
            sock.settimeout(20)  # a hang guard only; the answer is immediate
            assert sock.connect_ex((host.address, host.port)) == errno.EHOSTUNREACH

        host.restore()
        _code, path = route_to(host.address)
        assert f"dev {host.link}" in path

    # Gone with the last host, and only then.
    assert f"unreachable {catch_all}" not in routes()


def _addresses_of(network: str) -> list[str]:
    return [str(address) for address in ipaddress.ip_network(network)]
