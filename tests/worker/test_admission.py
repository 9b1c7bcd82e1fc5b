"""How many evaluations a worker takes at once: grown while its CPU and the judge have
room, shrunk while the judge's pacing holds calls back, between the start and the
ceiling."""

from n8n_deepeval_pipeline.worker.admission import START_PER_WORKER, WINDOW_S, Admission


def _worker(start=16, ceiling=64, share=0.5) -> Admission:
    admission = Admission(start=start, ceiling=ceiling, cpu_share=share)
    admission.begin(cpu_s=0.0, now=0.0)
    return admission


def _windows(admission, busy, held_back=0, count=1, cpu=0.0, at=0.0):
    """``count`` windows in which the worker used ``busy`` CPUs; the last CPU and time."""
    for _ in range(count):
        cpu, at = cpu + busy * WINDOW_S, at + WINDOW_S
        admission.observe(cpu, at, held_back)
    return cpu, at


def test_an_idle_cpu_and_a_judge_with_room_double_the_count_every_window():
    admission = _worker(ceiling=100)
    caps = []
    cpu = at = 0.0
    for _ in range(4):
        cpu, at = _windows(admission, busy=0.1, cpu=cpu, at=at)
        caps.append(admission.cap)
    assert caps == [32, 64, 100, 100]  # never beyond the ceiling


def test_a_busy_cpu_keeps_the_count():
    admission = _worker(share=0.5)
    _windows(admission, busy=0.4, count=8)  # above 75 % of its half a CPU
    assert admission.cap == 16


def test_calls_held_back_by_the_judge_halve_the_count_down_to_the_start():
    admission = _worker(ceiling=256)
    cpu, at = _windows(admission, busy=0.1, count=4)
    assert admission.cap == 256
    cpu, at = _windows(admission, busy=0.1, held_back=3, cpu=cpu, at=at)
    assert admission.cap == 128
    _windows(admission, busy=0.0, held_back=1, count=10, cpu=cpu, at=at)
    assert admission.cap == 16


def test_readings_closer_than_a_window_change_nothing():
    admission = _worker()
    for step in range(1, 10):  # answers in a burst, 10 ms apart
        admission.observe(0.0, step * 0.01, held_back=0)
    assert admission.cap == 16
    admission.observe(0.0, WINDOW_S + 0.01, held_back=0)
    assert admission.cap == 32


def test_a_worker_starts_with_its_part_of_a_small_batch_and_never_above_its_ceiling():
    assert Admission.for_pool(ceiling=64, workers=4, batch=10).cap == 3
    assert Admission.for_pool(ceiling=64, workers=4, batch=1000).cap == START_PER_WORKER
    assert Admission.for_pool(ceiling=1, workers=4, batch=1000).cap == 1
    one = Admission.for_pool(ceiling=64, workers=1, batch=1000)
    assert one.cpu_share <= 1.0  # a worker is one interpreter: at most one CPU
