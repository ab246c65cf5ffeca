"""People without faces (issue 20): the pure rules on boxes whose answer is known — duplicate suppression,
tracking through a crossing and a gap, motion phrases, and what the text says (and omits when a face names the
person)."""

from __future__ import annotations

from m3graph.perception.people import Box, PeopleReport, Track, describe, motion, stitch, suppress, track

W = 640


def _walk(t: float, x0: float, speed: float, y: float = 200, h: float = 160) -> Box:
    return Box(x0 + speed * t - h / 4, y, h / 2, h, 1.0)


def test_duplicates_and_a_window_around_the_same_person_are_suppressed() -> None:
    person = Box(100, 100, 64, 128, 2.0)
    shifted = Box(104, 102, 64, 128, 1.0)  # IoU ~0.85 with person
    around = Box(84, 70, 100, 200, 1.5)  # a larger scale's window holding the same person
    other = Box(300, 100, 64, 128, 0.8)
    assert suppress([shifted, around, person, other]) == [person, other]


def test_two_walkers_crossing_with_missed_samples_stay_two_tracks() -> None:
    times = [k * 0.5 for k in range(41)]  # 20 s at 2 fps
    dets: list[list[Box]] = []
    for t in times:
        boxes = [_walk(t, 0, 32, y=200), _walk(t, W, -32, y=260)]  # they cross at t = 10 s
        if 9.0 <= t <= 11.0:  # the far one is hidden behind the near one for 2 s
            boxes = boxes[1:]
        if t in (3.0, 3.5):  # the detector misses the first walker twice
            boxes = [b for b in boxes if b.cx > 200 or t < 3.0]
        dets.append(boxes)
    tracks = track(times, dets)
    assert len(tracks) == 2
    lr, rl = sorted(tracks, key=lambda tr: tr.seen[0][1].cx)
    assert motion(lr, W) == "walk from left to right" and motion(rl, W) == "walk from right to left"
    assert lr.first_s == 0.0 and lr.last_s == 20.0 and rl.last_s == 20.0
    assert all(b.cx < 330 or t > 9 for t, b in lr.seen)  # never took the other walker's boxes before crossing


def test_a_walker_missed_for_five_seconds_is_stitched_but_a_stranger_elsewhere_is_not() -> None:
    times = [k * 0.5 for k in range(41)]
    seen = [[_walk(t, 0, 32)] if not 5.0 < t < 10.5 else [] for t in times]  # hidden from 5.5 s to 10 s
    (one,) = track(times, seen)
    assert (one.first_s, one.last_s, len(one.seen)) == (0.0, 20.0, 41 - 10)
    before = Track([(t, _walk(t, 0, 32)) for t in times[:10]])
    stranger = Track([(t, _walk(t, 600, -32, y=20)) for t in times[20:30]])  # starts far from the prediction
    assert len(stitch([before, stranger])) == 2


def test_a_single_sample_false_positive_is_not_a_person() -> None:
    times = [0.0, 0.5, 1.0, 1.5]
    dets = [[Box(10, 10, 64, 128)], [], [Box(400, 10, 64, 128)], [Box(400, 10, 64, 128)]]
    assert track(times, dets) == []  # neither reaches MIN_HITS samples


def test_depth_motion_comes_from_the_box_height() -> None:
    times = [k * 0.5 for k in range(20)]
    near = track(times, [[Box(300, 100 + 10 * k, 40 + 4 * k, 80 + 8 * k)] for k in range(20)])
    still = track(times, [[Box(300, 100, 64, 128)] for _ in range(20)])
    assert motion(near[0], W) == "walk towards the camera"
    assert motion(still[0], W) == "stay in one place"


def _report() -> PeopleReport:
    times = [k * 0.5 for k in range(60)]
    dets = [[b for b in ([_walk(t, 0, 40)] if 2.0 <= t <= 14.0 else [])]
            + [_walk(t, 0, 40, y=260)] * (4.0 <= t <= 29.5)
            + [Box(500, 50, 40, 100)] for t in times]
    return PeopleReport(times, dets, track(times, dets), W, 480, 0.1)


def test_the_text_counts_groups_and_times_people_in_video_seconds() -> None:
    lines = [text for _, text in describe(_report(), clip_start_s=60.0)]
    assert lines == [
        "Three people with no recognised face are seen in this clip, at most three at once.",
        "One person stays in one place: is there from the start and stays to the end.",
        "Two people walk from left to right: one enters at 62.0 s and leaves at 74.0 s; one enters at 64.0 s and "
        "stays to the end.",
    ]


def test_a_person_whose_face_is_recognised_is_left_to_the_face_lines() -> None:
    report = _report()
    standing_face = [(60.0 + 10.0, (510, 60, 530, 80))]  # a recognised face inside the standing person's box
    lines = [text for _, text in describe(report, 60.0, standing_face)]
    assert lines[0].startswith("Two people with no recognised face")
    assert not any("stays in one place" in line for line in lines)
    elsewhere = [(70.0, (10, 400, 30, 420))]  # a face outside every person's box names nobody
    assert describe(report, 60.0, elsewhere)[0][1].startswith("Three people")
    first_walker_face = [(60.0 + 16.0, (200, 210, 220, 230))]  # where walker 1 was, but after it left
    assert describe(report, 60.0, first_walker_face)[0][1].startswith("Three people")
    assert describe(PeopleReport([], [], [], 0, 0, 0.0), 0.0) == []
