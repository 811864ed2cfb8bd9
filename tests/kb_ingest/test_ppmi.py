"""PPMI MDS-UPDRS export folder: loose file names, parts joined per PATNO+EVENT_ID, OFF/ON kept apart."""

import datetime as dt

import pytest

from kb_store.ingest import load_sources
from kb_store.ppmi_parts import part_from_name
from kb_store.profiles import load_profile

PROF = load_profile("mds-updrs")
P1R = ["NP1COG", "NP1HALL", "NP1DPRS", "NP1ANXS", "NP1APAT", "NP1DDS"]
P1P = ["NP1SLPN", "NP1SLPD", "NP1PAIN", "NP1URIN", "NP1CNST", "NP1LTHD", "NP1FATG"]
P2 = [i.code for i in PROF.items if i.code.startswith("NP2")]
P3 = [i.code for i in PROF.items if i.code.startswith("NP3")]
KEYS = ["REC_ID", "PATNO", "EVENT_ID", "PAG_NAME", "INFODT"]


@pytest.mark.parametrize(
    "name,part",
    [
        ("MDS_UPDRS_Part_I.csv", "I"),
        ("MDS_UPDRS_Part_I__Patient_Questionnaire.csv", "I-patient"),
        ("mds-updrs_part_ii__patient_questionnaire_05Sep2023.CSV", "II"),
        ("MDS-UPDRS_Part_III_05Sep2023.csv", "III"),
        ("MDS_UPDRS_Part_IV__Motor_Complications.csv", "IV"),
        ("MDS__UPDRS__Part__III.csv", "III"),
        ("Demographics.csv", None),
    ],
)
def test_part_from_name(name, part):
    assert part_from_name(name) == part


@pytest.fixture
def ppmi_dir(tmp_path, write_csv):
    d = tmp_path / "ppmi"
    d.mkdir()

    def w(name, header, rows):
        p = write_csv(f"ppmi/{name}", header, rows)
        return p

    w(
        "MDS_UPDRS_Part_I_05Sep2023.csv",
        [*KEYS, *P1R, "NP1RTOT", "NUPSOURC"],
        [
            [1, 3001, "BL", "NUPDRS1", "02/2020", *[1] * 6, 6, 1],
            [2, 3001, "V04", "NUPDRS1", "02/2021", *[1] * 6, 6, 1],
            [3, 3002, "BL", "NUPDRS1", "05/2020", *[0] * 6, 0, 1],
            [4, 3004, "BL", "NUPDRS1", "13/2020", *[0] * 6, 0, 1],  # bad date: row rejected
        ],
    )
    w(
        "mds-updrs_part_i__patient_questionnaire.csv",
        [*KEYS, *P1P, "NP1PTOT"],
        [
            [1, 3001, "BL", "NUPDRS1P", "02/2020", *[1] * 7, 7],
            [2, 3001, "V04", "NUPDRS1P", "02/2021", *[2] * 7, 14],
            [3, 3002, "BL", "NUPDRS1P", "05/2020", *[0] * 7, 0],
            [4, 3004, "BL", "NUPDRS1P", "06/2020", *[0] * 7, 0],
        ],
    )
    w(
        "MDS_UPDRS_Part_II__Patient_Questionnaire_05Sep2023.CSV",
        [*KEYS, *P2, "NP2PTOT"],
        [
            [1, 3001, "BL", "NUPDRS2P", "02/2020", *[1] * 13, 13],
            [2, 3001, "BL", "NUPDRS2P", "02/2020", *[2] * 13, 26],  # duplicate row
            [3, 3001, "V04", "NUPDRS2P", "02/2021", *[1] * 13, 13],
            [4, 3002, "BL", "NUPDRS2P", "05/2020", *[1] * 13, 13],
            [5, 3004, "BL", "NUPDRS2P", "06/2020", *[1] * 13, 13],
        ],
    )
    h3 = [*KEYS, "PDSTATE", "PDMEDYN", *P3, "NP3TOT", "NHY"]
    gait = P3.index("NP3GAIT")

    def p3(rec, pat, ev, pag, dt_, state, val, tot, nhy, **over):
        items = [val] * len(P3)
        for k, v in over.items():
            items[P3.index(k)] = v
        return [rec, pat, ev, pag, dt_, state, 1, *items, tot, nhy]

    w(
        "MDS-UPDRS_Part_III_05Sep2023.csv",
        h3,
        [
            p3(1, 3001, "SC", "NUPDRS3", "01/2020", "", 3, 99, 2),
            p3(2, 3001, "BL", "NUPDRS3", "02/2020", "", 2, 66, 2),
            p3(3, 3001, "BL", "NUPDRS3A", "02/2020", "ON", 1, 33, 2),
            p3(4, 3001, "V04", "NUPDRS3", "02/2021", "OFF", 2, 64, 2, NP3GAIT=101),
            p3(5, 3001, "U01", "NUPDRS3", "04/2021", "OFF", 2, 66, 2),
            p3(6, 3002, "BL", "NUPDRS3A", "05/2020", "ON", 1, 33, 101),
            p3(7, 3003, "SC", "NUPDRS3", "07/2020", "", 1, 50, 1),  # no BL: SC is used; wrong total
            p3(8, 3004, "BL", "NUPDRS3", "06/2020", "", 0, 0, 1),
        ],
    )
    assert gait >= 0
    w("Demographics.csv", ["PATNO", "EVENT_ID", "SEX"], [[3001, "SC", 1]])
    return d


def by(result, pid):
    return sorted(
        (s for s in result.sessions if s.proj_id == pid), key=lambda s: (s.visit, s.condition)
    )


def rules(result, rule):
    return [i for i in result.issues if i.rule == rule]


def test_ppmi_folder_joined(ppmi_dir, h):
    r = load_sources([ppmi_dir], today=dt.date(2026, 1, 1))
    assert r.stats["files_skipped"] == ["Demographics.csv"]
    s3001 = by(r, 3001)
    assert [(s.extra["event_id"], s.condition, s.visit) for s in s3001] == [
        ("BL", "OFF", 1),
        ("BL", "ON", 1),
        ("V04", "OFF", 2),
        ("U01", "OFF", 3),
    ]
    off, on = s3001[0], s3001[1]
    assert (
        off.date == dt.date(2020, 2, 1) and off.profile == "mds-updrs" and off.instrument == "updrs"
    )
    sc_off = off.domain_scores()
    assert (
        sc_off["nonmotor"].score == 13 and sc_off["adl"].score == 13 and sc_off["motor"].score == 66
    )
    ons = on.domain_scores()
    assert (
        ons["motor"].score == 33 and ons["nonmotor"].score is None
    )  # never averaged, Parts I/II on OFF
    assert len(off.extra["sources"]) == 4
    v04 = s3001[2]
    assert v04.items["NP3GAIT"] is None and v04.domain_scores()["motor"].partial
    assert any(i.column == "NP3GAIT" for i in rules(r, "not_rated"))
    # SC superseded by BL; duplicate Part II row rejected
    (sc,) = rules(r, "ppmi_screening_superseded")
    assert sc.file == "MDS-UPDRS_Part_III_05Sep2023.csv" and sc.row == 2 and sc.severity == "error"
    (dup,) = rules(r, "ppmi_duplicate_row")
    assert dup.row == 3
    # ON-only patient: Parts I/II attach to the ON exam; NHY 101 = not rated
    (s3002,) = by(r, 3002)
    assert s3002.condition == "ON" and s3002.domain_scores()["adl"].score == 13
    assert s3002.extra["hoehn_yahr"] is None
    # SC without BL is used
    (s3003,) = by(r, 3003)
    assert s3003.extra["event_id"] == "SC"
    assert any("3003" in i.message for i in rules(r, "ppmi_event"))
    assert any(i.column == "NP3TOT" for i in rules(r, "total_mismatch"))
    # bad Part I date: row rejected, session partial
    assert rules(r, "unparseable_date")[0].row == 5
    (s3004,) = by(r, 3004)
    assert s3004.domain_scores()["nonmotor"].missing == tuple(P1R)
    assert any("3004" in i.message for i in rules(r, "missing_item"))
    assert rules(r, "month_precision_date")
    assert any("REC_ID" in i.column for i in rules(r, "ignored_column"))
    assert not rules(r, "unknown_column")
    files = [p for p in ppmi_dir.iterdir() if p.name != "Demographics.csv"]
    assert h.unaccounted(r, files) == []
    assert not rules(r, "unaccounted_row")


def test_ppmi_forced_format_and_missing_parts(ppmi_dir):
    only3 = [ppmi_dir / "MDS-UPDRS_Part_III_05Sep2023.csv"]
    r = load_sources(only3, fmt="ppmi", today=dt.date(2026, 1, 1))
    assert len(rules(r, "ppmi_missing_part")) == 3
    assert all(s.domain_scores()["nonmotor"].score is None for s in r.sessions)
    # missing items of absent part files are not repeated per session
    assert not rules(r, "missing_item") or all(
        "NP1" not in i.column for i in rules(r, "missing_item")
    )


def test_ppmi_row_rules(tmp_path, write_csv, h):
    d = tmp_path / "x"
    d.mkdir()
    h3 = ["PATNO", "EVENT_ID", "INFODT", "PAG_NAME", "PDSTATE", *P3, "MYSTERY"]
    write_csv(
        "x/MDS_UPDRS_Part_III.csv",
        h3,
        [
            [5, "BL", "03/2021", "NUPDRS3A", "OFF", *[1] * len(P3), ""],  # PAG says ON, PDSTATE OFF
            [5, "", "04/2021", "NUPDRS3", "", *[1] * len(P3), ""],  # blank event
            [6, "V02", "04/2021", "NUPDRS3", "", *[1] * len(P3), ""],
        ],
    )
    write_csv(
        "x/MDS_UPDRS_Part_II__Patient_Questionnaire.csv",
        ["PATNO", "EVENT_ID", "INFODT", *P2],
        [
            [5, "BL", "04/2021", *[0] * 13],
            [
                6,
                "V02",
                "04/2021",
                *["x"] + [0] * 12,
            ],  # junk: Part II row rejected, session from Part III
        ],
    )
    r = load_sources([d], today=dt.date(2026, 1, 1))
    (c,) = rules(r, "ppmi_condition_conflict")
    assert c.row == 2 and "read as OFF" in c.message
    assert rules(r, "ppmi_missing_event")[0].row == 3
    (pd_,) = rules(r, "ppmi_part_dates_differ")
    assert "03/2021" in pd_.message and "04/2021" in pd_.message
    s5 = by(r, 5)[0]
    assert s5.condition == "OFF" and s5.date == dt.date(2021, 3, 1)
    assert rules(r, "non_numeric")[0].file == "MDS_UPDRS_Part_II__Patient_Questionnaire.csv"
    (s6,) = by(r, 6)
    assert s6.domain_scores()["adl"].score is None
    assert rules(r, "unknown_column")[0].column == "MYSTERY"
    assert h.unaccounted(r, list(d.iterdir())) == []
