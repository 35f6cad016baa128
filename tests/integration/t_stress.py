"""The quick part of the reliability run (tests/stress/run-stress is the
long one): stress patterns and real servers, traced vs native."""

import os
import sys

from harness import check, need, Failure

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "stress"))
import stresslib  # noqa: E402


def expect_same(why):
    if why:
        raise Failure(why)


def mode_check(mode, sampled=False):
    opts = ["--sample-rate", "64KiB"] if sampled else []
    return lambda: expect_same(stresslib.stress_mode(mode, opts, quick=True))


for _mode in stresslib.MODES:
    check("stress: %s behaves as natively under full tracking" % _mode)(
        mode_check(_mode))
check("stress: signals behaves as natively under sampled tracking")(
    mode_check("signals", True))
check("stress: forks behaves as natively under sampled tracking")(
    mode_check("forks", True))


@check("stress: redis-server under redis-benchmark completes as natively, report written")
def t_redis():
    need("redis-server")
    need("redis-benchmark")
    expect_same(stresslib.redis(2000))


@check("stress: nginx with two pre-forked workers serves the same pages, exits as natively")
def t_nginx():
    need("nginx")
    expect_same(stresslib.nginx(100))


@check("stress: beam.smp spawning 2000 processes prints and exits as natively")
def t_beam():
    need("erl")
    expect_same(stresslib.beam())
