"""The in-flight slots: what one call costs to take a slot when many are held."""

import asyncio
import fcntl

from n8n_deepeval_pipeline.judging import in_flight
from n8n_deepeval_pipeline.judging.in_flight import InFlightLimit


def test_a_call_takes_a_free_slot_without_trying_those_its_process_holds(tmp_path, monkeypatch):
    limit = InFlightLimit(tmp_path / "slots", 64)
    tries = []
    flock = fcntl.flock

    def counted(fd, operation):
        if operation & fcntl.LOCK_NB:
            tries.append(fd)
        return flock(fd, operation)

    async def scenario():
        held, release = asyncio.Event(), asyncio.Event()
        holding = 0

        async def hold():
            nonlocal holding
            async with limit.slot():
                holding += 1
                if holding == 63:
                    held.set()
                await release.wait()

        holders = [asyncio.create_task(hold()) for _ in range(63)]
        await held.wait()
        monkeypatch.setattr(in_flight.fcntl, "flock", counted)
        async with limit.slot():
            taken = len(tries)
        release.set()
        await asyncio.gather(*holders)
        return taken

    # From slot 0 on, it tried the 63 held slots before the free one.
    assert asyncio.run(scenario()) == 1


def test_the_slots_cap_the_calls_of_a_process_and_every_call_gets_one(tmp_path):
    limit = InFlightLimit(tmp_path / "slots", 8)
    in_flight_now = peak = done = 0

    async def call():
        nonlocal in_flight_now, peak, done
        async with limit.slot(lambda: 3):
            in_flight_now += 1
            peak = max(peak, in_flight_now)
            await asyncio.sleep(0.005)
            in_flight_now -= 1
            done += 1

    async def scenario():
        await asyncio.gather(*(call() for _ in range(40)))

    asyncio.run(scenario())
    assert (peak, done) == (3, 40)


def test_a_call_waiting_for_a_slot_another_process_holds_looks_less_and_less_often(
    tmp_path, monkeypatch
):
    """Each look tries every allowed slot (a few system calls each): at a fixed 10 ms, a
    call waiting half a second for another worker's slot looked ~50 times; backing off
    to 160 ms, it looks at most ~10 times, and still takes the slot once it is free."""
    folder = tmp_path / "slots"
    other, limit = InFlightLimit(folder, 1), InFlightLimit(folder, 1)  # two processes
    looks = []
    take = limit._try_take

    def counted(allowed):
        looks.append(allowed)
        return take(allowed)

    monkeypatch.setattr(limit, "_try_take", counted)

    async def scenario():
        held = asyncio.Event()

        async def hold():
            async with other.slot():
                held.set()
                await asyncio.sleep(0.5)

        holder = asyncio.create_task(hold())
        await held.wait()
        async with limit.slot():
            got = True
        await holder
        return got

    assert asyncio.run(scenario())
    assert 3 <= len(looks) <= 12, looks
