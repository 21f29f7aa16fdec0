"""Game-telemetry event types and the attributes each one carries before any drift.

Names are fixed (they do not depend on the seed) so `--event-types 300` always means the same
300 types; their attribute blocks and volume ranks are drawn from the seed.
"""

from __future__ import annotations

import itertools
import random
from dataclasses import dataclass

from streamops.pipeline.generator.attribute_schema import (
    Choice,
    Flag,
    FloatRange,
    Ident,
    IntRange,
    ListOf,
    Node,
    Obj,
    Scalar,
    obj,
)

COMMON_EVENT_TYPES = (
    "session_start",
    "session_end",
    "match_start",
    "match_end",
    "level_start",
    "level_complete",
    "level_fail",
    "item_purchase",
    "item_equip",
    "quest_start",
    "quest_complete",
    "achievement_unlock",
    "store_view",
    "lootbox_open",
    "currency_spend",
    "friend_invite",
    "party_join",
    "party_leave",
    "chat_send",
    "tutorial_complete",
    "ad_view",
    "crash_report",
    "matchmaking_start",
    "matchmaking_cancel",
    "battlepass_claim",
    "character_create",
    "skin_equip",
    "weapon_upgrade",
    "leaderboard_view",
    "tournament_join",
)
NOUNS = (
    "session",
    "match",
    "round",
    "level",
    "quest",
    "mission",
    "achievement",
    "item",
    "store",
    "bundle",
    "currency",
    "lootbox",
    "battlepass",
    "season",
    "character",
    "skin",
    "weapon",
    "vehicle",
    "skill",
    "inventory",
    "friend",
    "party",
    "lobby",
    "clan",
    "chat",
    "tournament",
    "leaderboard",
    "replay",
    "tutorial",
    "ad",
    "notification",
    "settings",
    "crash",
    "matchmaking",
    "checkpoint",
    "boss",
    "npc",
    "crafting",
    "trade",
    "gift",
    "mail",
    "emote",
    "spectator",
    "map",
)
VERBS = (
    "start",
    "end",
    "complete",
    "fail",
    "abandon",
    "purchase",
    "unlock",
    "equip",
    "upgrade",
    "open",
    "join",
    "leave",
    "invite",
    "accept",
    "decline",
    "view",
    "click",
    "share",
    "report",
    "claim",
    "reward",
    "spawn",
    "kill",
    "death",
    "pause",
    "resume",
    "skip",
    "retry",
    "select",
    "create",
    "delete",
    "update",
    "rate",
    "enter",
    "exit",
)

PLATFORMS = ("pc", "ps5", "ps4", "xbox_series", "xbox_one", "switch", "ios", "android")
REGIONS = ("eu-west", "eu-north", "us-east", "us-west", "ap-northeast", "ap-southeast", "sa-east")
DEVICE_OS = ("windows", "linux", "macos", "android", "ios", "orbis", "scarlett", "horizon")
DEVICE_MODELS = ("desktop", "laptop", "ps5", "xsx", "switch-oled", "pixel-8", "iphone-15", "galaxy-s24")
CLIENT_VERSIONS = ("1.12.0", "1.12.3", "1.13.0", "1.13.1", "2.0.0-rc1")
MODES = ("ranked", "casual", "coop", "battle_royale", "campaign", "training")
MAPS = ("harbor", "canyon", "citadel", "tundra", "jungle", "skyline", "foundry")
CURRENCIES = ("gold", "gems", "credits", "usd", "eur")
CONNECTIONS = ("wifi", "ethernet", "cellular")
TAGS = ("pvp", "pve", "ranked", "weekend_event", "new_player", "returning", "whale", "beta")

PLAYER = obj(
    id=Scalar(Ident("p", 10_000_000)),
    level=Scalar(IntRange(1, 120)),
    platform=Scalar(Choice(PLATFORMS)),
    region=Scalar(Choice(REGIONS)),
)
CONTEXT = obj(
    device=obj(os=Scalar(Choice(DEVICE_OS)), model=Scalar(Choice(DEVICE_MODELS))),
    session=obj(id=Scalar(Ident("s", 1_000_000_000)), seq=Scalar(IntRange(1, 2_000))),
    client_version=Scalar(Choice(CLIENT_VERSIONS)),
)
OPTIONAL_BLOCKS: tuple[tuple[str, Node], ...] = (
    (
        "match",
        obj(
            id=Scalar(Ident("m", 100_000_000)),
            mode=Scalar(Choice(MODES)),
            map=Scalar(Choice(MAPS)),
            team_size=Scalar(IntRange(1, 7)),
        ),
    ),
    (
        "economy",
        obj(
            currency=Scalar(Choice(CURRENCIES)),
            price=Scalar(FloatRange(0.99, 99.99)),
            balance=Scalar(IntRange(0, 100_000)),
        ),
    ),
    (
        "position",
        obj(
            x=Scalar(FloatRange(-5_000, 5_000)),
            y=Scalar(FloatRange(-5_000, 5_000)),
            z=Scalar(FloatRange(0, 800)),
        ),
    ),
    (
        "stats",
        obj(
            score=Scalar(IntRange(0, 50_000)),
            kills=Scalar(IntRange(0, 40)),
            accuracy=Scalar(FloatRange(0, 1)),
        ),
    ),
    (
        "network",
        obj(
            latency_ms=Scalar(IntRange(5, 400)),
            packet_loss=Scalar(FloatRange(0, 0.2)),
            connection=Scalar(Choice(CONNECTIONS)),
        ),
    ),
    ("tags", ListOf(Scalar(Choice(TAGS)), 1, 3)),
    (
        "items",
        ListOf(
            obj(
                sku=Scalar(Ident("sku-", 100_000)),
                qty=Scalar(IntRange(1, 10)),
                unit_price=Scalar(FloatRange(0.5, 50)),
            ),
            1,
            2,
        ),
    ),
    ("reward", obj(xp=Scalar(IntRange(0, 5_000)), coins=Scalar(IntRange(0, 1_000)))),
    ("is_first_time", Scalar(Flag(0.1))),
)
METRIC_FIELDS = ("duration_ms", "amount", "count", "xp_gained", "damage", "distance_m", "attempts")

INCOMPATIBLE_PATH = "player.level"
"""Every type carries `player.level`, the field an incompatible producer change turns into "L5"."""


@dataclass(frozen=True)
class EventTypeSpec:
    """One event type before drift: its name, base attributes, and which integer may widen."""

    name: str
    base: Obj
    metric_path: str
    weight: float


def _all_names() -> tuple[str, ...]:
    extra = [f"{noun}_{verb}" for noun, verb in itertools.product(NOUNS, VERBS)]
    random.Random("event-type-names").shuffle(extra)
    return COMMON_EVENT_TYPES + tuple(name for name in extra if name not in COMMON_EVENT_TYPES)


ALL_EVENT_TYPE_NAMES = _all_names()
MAX_EVENT_TYPES = len(ALL_EVENT_TYPE_NAMES)


def event_type_names(count: int) -> tuple[str, ...]:
    """The first `count` names: common ones first, then noun_verb pairs in a fixed order."""
    return ALL_EVENT_TYPE_NAMES[:count]


WEIGHT_SKEW = 0.7
"""Volume falls with rank as 1/rank^0.7: a few busy types and a long tail, as in production."""


def build_catalog(count: int, seed: int) -> tuple[EventTypeSpec, ...]:
    names = event_type_names(count)
    ranks = list(range(count))
    random.Random(f"{seed}:ranks").shuffle(ranks)
    return tuple(
        _spec(name, random.Random(f"{seed}:type:{name}"), 1.0 / (rank + 1) ** WEIGHT_SKEW)
        for name, rank in zip(names, ranks)
    )


def _spec(name: str, rng: random.Random, weight: float) -> EventTypeSpec:
    noun = name.split("_")[0]
    blocks = rng.sample(OPTIONAL_BLOCKS, rng.randint(1, 3))
    blocks.sort(key=OPTIONAL_BLOCKS.index)
    metric = rng.choice(METRIC_FIELDS)
    fields: list[tuple[str, Node]] = [
        ("player", PLAYER),
        ("context", CONTEXT),
        (f"{noun}_id", Scalar(Ident(f"{noun[:3]}-", 1_000_000))),
        (metric, Scalar(IntRange(0, 100_000))),
        *blocks,
    ]
    return EventTypeSpec(name=name, base=Obj(tuple(fields)), metric_path=metric, weight=weight)
