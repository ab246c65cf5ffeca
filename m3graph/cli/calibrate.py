"""`m3graph calibrate faces|voices`: identity thresholds measured on real labelled people.

Prints markdown tables (the ones docs/evaluation.md "Identity calibration" quotes): the same/different cosine
distributions, EER and chosen threshold with margins, and pairwise / B-cubed identity precision-recall of
average-linkage clustering per threshold. The values chosen from these runs live in one place each:
`settings.MODEL_THRESHOLDS` (identity, per embedder) and the `PerceptionConfig` clustering defaults; the command
prints the settings in force beside the measurement.
"""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Any

import click

from m3graph.cli.tables import echo_json, json_option
from m3graph.settings import load_settings

DEFAULT_DATA = Path("../shared/data/identity")
DEFAULT_MEDIA = Path(".m3graph/identity-media")


def _sep_table(reports: list) -> str:  # list[EmbedderReport]
    lines = ["| embedder | set | items / ids | same median (p05) | different median (p95) | EER (at) | best threshold "
             "(balanced acc.) | margins same / diff | identity threshold in force (balanced acc.) | embedding s / "
             "audio s |", "|---|---|---|---|---|---|---|---|---|---|"]
    for r in reports:
        s = r.separation
        at = "-" if r.setting is None else f"{r.setting:.3f} ({r.accuracy_at_setting:.1%})"
        cost = f"{r.embed_s:.1f} / {r.audio_s:.0f}" if r.audio_s else "-"
        lines.append(f"| {r.name} | {r.dataset} | {r.items} / {r.identities} | {s.same_median:.3f} ({s.same_p05:.3f})"
                     f" | {s.diff_median:.3f} ({s.diff_p95:.3f}) | {s.eer:.1%} ({s.eer_threshold:.3f}) | "
                     f"{s.threshold:.3f} ({s.balanced_accuracy:.1%}) | {s.margin_same:+.3f} / {s.margin_diff:+.3f} | "
                     f"{at} | {cost} |")
    return "\n".join(lines)


def _sweep_table(reports: list) -> str:
    lines = ["| embedder | set | best clustering threshold (F1 within 0.01 of best) | clusters / ids | "
             "pairwise P / R / F1 | B-cubed P / R / F1 |", "|---|---|---|---|---|---|"]
    for r in reports:
        b = r.best
        near = [x.threshold for x in r.sweep if x.pairwise.f1 >= b.pairwise.f1 - 0.01]
        lines.append(f"| {r.name} | {r.dataset} | {b.threshold:.3f} ({min(near):.3f}-{max(near):.3f}) | "
                     f"{b.clusters} / {r.identities} | "
                     f"{b.pairwise.precision:.3f} / {b.pairwise.recall:.3f} / {b.pairwise.f1:.3f} | "
                     f"{b.bcubed.precision:.3f} / {b.bcubed.recall:.3f} / {b.bcubed.f1:.3f} |")
    return "\n".join(lines)


def _as_json(reports: list, settings: dict[str, Any]) -> None:  # list[EmbedderReport]
    """The reports for programs: every field of each report, its best clustering row, and the settings in force."""
    echo_json({"reports": [asdict(r) | {"best": asdict(r.best)} for r in reports], "settings": settings})


@click.group()
def calibrate() -> None:
    """Identity thresholds measured on real labelled faces and voices."""


@calibrate.command("faces")
@click.option("--data", type=click.Path(exists=True, file_okay=False, path_type=Path), default=DEFAULT_DATA,
              show_default=True, help="the identity set (faces/identities.csv)")
@json_option
def faces_cmd(data: Path, as_json: bool) -> None:
    """Same/different distributions, EER and thresholds of the face embedder on 61 labelled photos."""
    from m3graph.perception.calibrate_media import calibrate_faces

    settings = load_settings()
    report = calibrate_faces(data / "faces", settings)
    if as_json:
        _as_json([report], {"identity.face_threshold": settings.face_match_threshold,
                            "perception.face_cluster_threshold": settings.perception.face_cluster_threshold})
        return
    click.echo(_sep_table([report]))
    click.echo()
    click.echo(_sweep_table([report]))
    if report.skipped:
        click.echo(f"\nskipped: {', '.join(report.skipped)}")
    click.echo(f"\nsettings: identity.face_threshold {settings.face_match_threshold:.3f}, "
               f"perception.face_cluster_threshold {settings.perception.face_cluster_threshold:.3f}")


@calibrate.command("voices")
@click.option("--data", type=click.Path(exists=True, file_okay=False, path_type=Path), default=DEFAULT_DATA,
              show_default=True, help="the identity set (voices/librispeech_test-other)")
@click.option("--media", type=click.Path(file_okay=False, path_type=Path), default=DEFAULT_MEDIA,
              show_default=True, help="scripts/fetch_identity_media.sh output (phone call, AMI clips)")
@click.option("--report", "full", is_flag=True, help="also run the voice pipeline (legacy vs pooled) on the "
              "phone call and the AMI clips and score pairwise F1 against their RTTM turns")
@click.option("--embedder", "embedders", multiple=True, type=click.Choice(["resemblyzer", "campplus"]),
              help="speaker embedder(s) to measure side by side (repeatable; default: the configured one)")
@click.option("--split", type=click.Choice(["all", "choose", "report"]), default="all", show_default=True,
              help="choose: LibriSpeech speakers 1-5 and AMI files 0-6, to pick thresholds on; report: the other "
              "speakers, AMI files 7-14 and the phone call, to score the chosen thresholds on")
@click.option("--method", "methods", multiple=True, type=click.Choice(["utterance", "pooled"]),
              help="one vector per item from the whole piece or the mean of its windows (default: both)")
@click.option("--cut-overlap", is_flag=True, help="phone call / AMI: embed only the time of each labelled turn "
              "during which nobody else speaks")
@click.option("--no-librispeech", is_flag=True, help="skip the read speech (the conversational sets only)")
@json_option
def voices_cmd(data: Path, media: Path, full: bool, embedders: tuple[str, ...], split: str,
               methods: tuple[str, ...], cut_overlap: bool, no_librispeech: bool, as_json: bool) -> None:
    """Same/different distributions, EER and thresholds of the speaker embedder on read and conversational speech."""
    from m3graph.perception.calibrate_media import (
        calibrate_librispeech,
        calibrate_oracle_turns,
        score_pipeline,
        with_perception,
    )

    settings = load_settings()
    voices = data / "voices" / "librispeech_test-other"
    have_media = (media / "pyannote" / "audio" / "sample" / "sample.wav").is_file()
    variants = [with_perception(settings, speaker_embedder=e) for e in embedders] or [settings]
    reports = []
    for variant in variants:
        for m in methods or ("utterance", "pooled"):
            if not no_librispeech:
                reports.append(calibrate_librispeech(voices, variant, m, split))
            for dataset in ("phone", "ami") if have_media else ():
                if (r := calibrate_oracle_turns(media, variant, dataset, m, split, cut_overlap)) is not None:
                    reports.append(r)
    if as_json:  # the calibration reports only (the --report pipeline scores print as a table)
        _as_json(reports, {f"{v.perception.speaker_embedder}": {
            "identity.voice_threshold": v.voice_match_threshold,
            "perception.voice_cluster_threshold": v.perception.voice_cluster_threshold,
            "perception.voice_pooled_threshold": v.perception.voice_pooled_threshold} for v in variants})
        return
    click.echo(_sep_table(reports))
    click.echo()
    click.echo(_sweep_table(reports))
    for variant in variants:
        click.echo(f"\nsettings ({variant.perception.speaker_embedder}): identity.voice_threshold "
                   f"{variant.voice_match_threshold:.3f}, perception.voice_cluster_threshold "
                   f"{variant.perception.voice_cluster_threshold:.3f}, perception.voice_pooled_threshold "
                   f"{variant.perception.voice_pooled_threshold}")
    if not have_media:
        click.echo(f"\n(no phone call / AMI clips in {media}: run scripts/fetch_identity_media.sh)")
        return
    if not full:
        return
    click.echo("\n| embedder | method | set | within-clip pairwise P / R / F1 | within B-cubed F1 | across clips "
               "pairwise P / R / F1 | across B-cubed F1 | speech covered | speakers found / true |")
    click.echo("|---|---|---|---|---|---|---|---|---|")
    for base, method in ((b, m) for b in variants for m in ("legacy", "pooled")):
        variant = with_perception(base, voice_turns=method)
        for dataset in ("phone", "ami"):
            s = score_pipeline(media, variant, dataset, variant.voice_match_threshold, split)
            click.echo(f"| {base.perception.speaker_embedder} | {method} | {dataset} | "
                       f"{s.within.precision:.3f} / {s.within.recall:.3f} / "
                       f"{s.within.f1:.3f} | {s.within_bcubed.f1:.3f} | {s.across.precision:.3f} / "
                       f"{s.across.recall:.3f} / {s.across.f1:.3f} | {s.across_bcubed.f1:.3f} | {s.coverage:.1%} | "
                       f"{s.speakers_found} / {s.speakers_true} |")
