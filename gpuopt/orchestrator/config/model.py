"""The configuration model: every section of gpuopt's TOML file, validated by pydantic.

Every model forbids unknown keys, so a typo is an error naming the key, not a silent
default. Durations are written like ``"10m"``, ``"20s"``, ``"1h30m"``, ``"7d"``.
"""

from __future__ import annotations

import re
from datetime import timedelta
from decimal import Decimal
from enum import StrEnum
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainSerializer,
    SecretStr,
    create_model,
    field_validator,
    model_validator,
)

from gpuopt.core.durations import format_duration, parse_duration
from gpuopt.policies.hazard import RESTART_OVERHEAD_HOURS
from gpuopt.policies.spot.probe import DEFAULT_PROBE_S, DEFAULT_PROBES_PER_TICK
from gpuopt.policies.spot.registry import DEFAULT_POLICY, POLICIES
from gpuopt.providers.clouds import (
    adapter_cloud_names,
    check_cloud,
    cloud_names,
    default_preemptions_per_hour,
)

# A cloud name the registry (providers/clouds.py) knows, checked when validated.
Cloud = Annotated[str, AfterValidator(check_cloud)]
CONFIG_DURATION_EXAMPLES = "'20s', '10m', '1h30m', '7d'"


# A configuration duration is at most this long either way (timedelta and the scheduler
# take it; 1e20 seconds overflowed both).
MAX_SETTING_DURATION = timedelta(days=100 * 366)


def parse_setting_duration(value: object) -> timedelta:
    """A configuration duration: any sign here, at most 100 years either way; each
    setting checks its own range."""
    result = parse_duration(value, positive=False, at_most=MAX_SETTING_DURATION,
                            examples=CONFIG_DURATION_EXAMPLES)
    if result < -MAX_SETTING_DURATION:
        raise ValueError(f"must be at most {format_duration(MAX_SETTING_DURATION)} either way")
    return result


def _no_bool(value: object) -> object:
    """TOML's true/false is not a number (pydantic would take true as 1)."""
    if isinstance(value, bool):
        raise ValueError("must be a number, not true/false")
    return value


def _at_least(minimum: timedelta) -> AfterValidator:
    def check(value: timedelta) -> timedelta:
        if value < minimum:
            raise ValueError(f"must be at least {format_duration(minimum)}")
        return value

    return AfterValidator(check)


Duration = Annotated[
    timedelta,
    BeforeValidator(parse_setting_duration),
    PlainSerializer(format_duration, return_type=str),
]
# Intervals the daemon sleeps between runs: below these it would spin (lease_renew = "0s"
# took 98% of a core) or compact to nothing.
Interval = Annotated[Duration, _at_least(timedelta(seconds=1))]
ShortInterval = Annotated[Duration, _at_least(timedelta(milliseconds=100))]
Number = Annotated[int, BeforeValidator(_no_bool)]


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class DatabaseConfig(_Section):
    # None = the SQLite file in the data directory (orchestrator.paths.default_sqlite_path).
    url: str | None = None

    @field_validator("url")
    @classmethod
    def _known_scheme(cls, v: str | None) -> str | None:
        if v is None or v == "":
            return None
        scheme = v.split("://", 1)[0] if "://" in v else ""
        if not (scheme.startswith("sqlite") or scheme.startswith("postgresql")):
            raise ValueError(
                "must be a SQLAlchemy URL: sqlite:////path/to/gpuopt.db or "
                "postgresql+psycopg://user@host:5432/dbname"
            )
        if scheme in ("postgresql", "postgres", "postgresql+psycopg2"):
            # The installed driver is psycopg 3.
            v = "postgresql+psycopg://" + v.split("://", 1)[1]
        return v


class CloudSettings(_Section):
    # Regions to poll and place in; empty = the adapter's default region list.
    regions: list[str] = Field(default_factory=list)


class _CloudsSection(_Section):
    # Clouds this installation uses. None (not set) = poll every cloud whose SDK finds
    # credentials, and run jobs locally (see ExecutorConfig.resolved).
    enabled: list[Cloud] | None = None

    def poll_clouds(self) -> tuple[str, ...]:
        """The enabled clouds gpuopt polls through their own API (a cloud priced only
        from SkyPilot's catalog has no adapter to poll)."""
        polled = adapter_cloud_names()
        if self.enabled is None:
            return polled
        return tuple(c for c in self.enabled if c in polled)

    def regions_for(self, cloud: str) -> list[str] | None:
        settings = getattr(self, cloud, None) if cloud in cloud_names() else None
        if not isinstance(settings, CloudSettings):
            return None  # not a cloud, or registered after the configuration model was built
        return list(settings.regions) or None


def _clouds_model() -> type[_CloudsSection]:
    """[clouds]: ``enabled`` plus one [clouds.<name>] table per registered cloud."""
    tables: dict[str, Any] = {
        name: (CloudSettings, Field(default_factory=CloudSettings)) for name in cloud_names()
    }
    return create_model("CloudsConfig", __base__=_CloudsSection, __module__=__name__,
                        **tables)


if TYPE_CHECKING:
    CloudsConfig = _CloudsSection
else:
    CloudsConfig = _clouds_model()


class ExecutorKind(StrEnum):
    AUTO = "auto"
    LOCAL = "local"
    SKYPILOT = "skypilot"


class ExecutorConfig(_Section):
    default: ExecutorKind = ExecutorKind.AUTO

    def resolved(self, clouds: CloudsConfig) -> ExecutorKind:
        """auto = local when no cloud is configured ([clouds] enabled unset or empty)."""
        if self.default is not ExecutorKind.AUTO:
            return self.default
        return ExecutorKind.SKYPILOT if clouds.enabled else ExecutorKind.LOCAL


class ReservedCapacity(_Section):
    cloud: Cloud
    region: str
    instance_type: str
    count: Number = Field(ge=1, le=100_000)


class PlacementConfig(_Section):
    # Expected spot interruptions per instance-hour when the cloud publishes no risk data;
    # clouds left out of the table keep their default.
    preemption_rates: dict[Cloud, Annotated[float, BeforeValidator(_no_bool)]] = Field(
        default_factory=default_preemptions_per_hour
    )
    # After a preemption, keep away from that (cloud, region, instance type, market) for this long.
    avoid_window: Annotated[Duration, _at_least(timedelta(0))] = timedelta(minutes=30)
    # What a (re)start costs before the job works again: provisioning, setup, loading the
    # last checkpoint. The plan's spot costing and the deadline spot policy both use it.
    restart_overhead: Annotated[Duration, _at_least(timedelta(0))] = timedelta(
        hours=RESTART_OVERHEAD_HOURS)
    # The spot policy that decides spot / on-demand / wait for `spot: auto` jobs with a
    # deadline (policies/spot/registry.py; `gpuopt simulate --policy` shows each one).
    spot_policy: str = DEFAULT_POLICY
    # Check deadlines at the pessimistic end of the runtime estimate (the p90 of its
    # held-out error, docs/estimates.md). Off only where runs take exactly their
    # estimate (the simulator).
    deadline_at_p90: bool = True

    @field_validator("spot_policy")
    @classmethod
    def _known_policy(cls, v: str) -> str:
        if v not in POLICIES:
            raise ValueError(f"unknown spot policy {v!r}; choose from {', '.join(POLICIES)}")
        return v

    @field_validator("preemption_rates", mode="before")
    @classmethod
    def _merge_defaults(cls, v: object) -> object:
        return {**default_preemptions_per_hour(), **v} if isinstance(v, dict) else v

    @field_validator("preemption_rates")
    @classmethod
    def _rates_in_range(cls, v: dict[str, float]) -> dict[str, float]:
        for cloud, rate in v.items():
            if not 0 <= rate <= 1:
                raise ValueError(f"{cloud}: {rate} must be between 0 and 1 per hour")
        return v


class SpotConfig(_Section):
    # Probe spot without stopping what is held (make before break, issue 25): a job under
    # the deadline spot policy that holds an attempt provisions the spot it moves to while
    # the attempt runs on, and stops it only once the new instance is up. Unset: on
    # executors whose placements are real and can provision (SkyPilot), not on the local
    # executor (its placements are simulated: a probe would only restart the program);
    # true: on every executor that can provision (local too); false: stop, then launch
    # (the launch information model, for comparison).
    probe: bool | None = None
    # The provisioning time the policy prices a probe at (seconds; policies/spot/probe.py).
    probe_seconds: float = Field(default=DEFAULT_PROBE_S, ge=0, le=86_400)
    # Probes one reconcile step may make, one after another, while each is refused for
    # capacity at once (failover: the policy, told that place had no spot, may pick
    # another; the replay's ``probes_per_tick``, policies/spot/probe.py). An executor that
    # learns of a refusal only at a later step (SkyPilot) fails over at that step.
    probes_per_step: int = Field(default=DEFAULT_PROBES_PER_TICK, ge=1, le=26)
    # Read the clouds' capacity signals (placement scores, offers listed or gone, Azure's
    # eviction rates, other jobs' preemptions) as weighted evidence, as the replay's
    # ``launch-probe+signals`` does (policies/spot/observed_signals.py); false: the job's
    # own launches, failures, preemptions and releases (and an unlisted offer as
    # unavailable ticks); other jobs' are a signal, switched off (not read at all).
    signals: bool = False
    # How often the daemon asks Azure Resource Graph for the spot eviction rates of the
    # Azure spot sizes it has prices for (when Azure is polled); 0: never. Once a day, as
    # the replay's signals model reads them (replay_signals.SignalModel.eviction_every_s).
    eviction_poll_interval: Annotated[Duration, _at_least(timedelta(0))] = timedelta(days=1)


class LogFormat(StrEnum):
    TEXT = "text"
    JSON = "json"


class DaemonConfig(_Section):
    poll_interval: Interval = timedelta(minutes=10)
    reconcile_interval: ShortInterval = timedelta(seconds=20)
    # Price-history compaction: how often it runs, and history older than compaction_after
    # is thinned to at most one row per offer per compaction_resolution.
    compaction_interval: Interval = timedelta(days=1)
    compaction_after: Annotated[Duration, _at_least(timedelta(0))] = timedelta(days=90)
    compaction_resolution: Interval = timedelta(hours=1)
    metrics_address: str = "127.0.0.1:9464"
    log_format: LogFormat = LogFormat.TEXT
    # Leadership between daemons on PostgreSQL (a session advisory lock): stand-bys retry
    # every min(5s, lease_renew); the leader confirms its lock before every step and every
    # half of that, and stops at the first failed check (daemon/runner.py). lease_renew is
    # the heartbeat interval; lease_ttl bounds how old a live daemon's heartbeat may be.
    lease_ttl: ShortInterval = timedelta(seconds=60)
    lease_renew: ShortInterval = timedelta(seconds=20)

    @field_validator("metrics_address")
    @classmethod
    def _host_port(cls, v: str) -> str:
        host, sep, port = v.rpartition(":")
        if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise ValueError(f"{v!r} must be HOST:PORT, e.g. 127.0.0.1:9464")
        return v

    @model_validator(mode="after")
    def _lease_order(self) -> DaemonConfig:
        if self.lease_renew >= self.lease_ttl:
            raise ValueError("lease_renew must be shorter than lease_ttl")
        return self


Weekday = Literal["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]
_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")


def _check_email(v: str) -> str:
    if not _EMAIL.match(v):
        raise ValueError(f"{v!r} is not an e-mail address")
    return v


MAX_TEAM_BUDGET = Decimal(10) ** 12  # micro-dollars in a 64-bit integer


class ReportConfig(_Section):
    timezone: str = "UTC"
    weekday: Weekday = "monday"
    time: str = "08:00"
    # Team name -> addresses that receive that team's weekly report.
    recipients: dict[str, list[str]] = Field(default_factory=dict)
    from_address: str = "gpuopt@localhost"
    # Team name -> weekly budget in USD, for the report's budget burn per team.
    team_budgets: dict[str, Decimal] = Field(default_factory=dict)

    @field_validator("team_budgets")
    @classmethod
    def _positive_budgets(cls, v: dict[str, Decimal]) -> dict[str, Decimal]:
        for team, amount in v.items():
            if not amount.is_finite() or amount <= 0:
                raise ValueError(f"{team}: a budget must be a positive amount in USD")
            if amount > MAX_TEAM_BUDGET:
                raise ValueError(f"{team}: a budget of at most {MAX_TEAM_BUDGET:,} USD")
        return v

    @field_validator("weekday", mode="before")
    @classmethod
    def _lower(cls, v: object) -> object:
        return v.strip().lower() if isinstance(v, str) else v

    @field_validator("timezone")
    @classmethod
    def _zone(cls, v: str) -> str:
        from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

        try:
            ZoneInfo(v)
        except (ZoneInfoNotFoundError, ValueError, OSError):  # OSError: a 400-character name
            raise ValueError(
                f"unknown time zone {v!r}: use an IANA name like Europe/Paris"
            ) from None
        return v

    @field_validator("time")
    @classmethod
    def _hhmm(cls, v: str) -> str:
        m = re.fullmatch(r"(\d{1,2}):(\d{2})", v.strip())
        if not m or int(m.group(1)) > 23 or int(m.group(2)) > 59:
            raise ValueError(f"{v!r} must be HH:MM (24-hour), e.g. 08:00")
        return f"{int(m.group(1)):02d}:{m.group(2)}"

    @field_validator("recipients")
    @classmethod
    def _emails(cls, v: dict[str, list[str]]) -> dict[str, list[str]]:
        for addresses in v.values():
            for a in addresses:
                _check_email(a)
        return v

    @field_validator("from_address")
    @classmethod
    def _from(cls, v: str) -> str:
        """One address, maybe with a display name ("gpuopt <gpuopt@example.com>"): it is
        the From header (control characters are refused for every setting, load.py)."""
        from email.utils import getaddresses

        found = getaddresses([v])
        if len(found) != 1 or not re.fullmatch(r"[^@\s]+@[^@\s]+", found[0][1]):
            raise ValueError(f"{v!r} must be one address, e.g. gpuopt@example.com or "
                             "'gpuopt <gpuopt@example.com>'")
        return v


class TelemetryConfig(_Section):
    # How often the run wrapper samples the node's GPUs with nvidia-smi (when it exists)
    # while a job runs; "0s" turns sampling off.
    interval: Duration = timedelta(seconds=15)

    @field_validator("interval")
    @classmethod
    def _off_or_positive(cls, v: timedelta) -> timedelta:
        if timedelta(0) < v < timedelta(milliseconds=100) or v < timedelta(0):
            raise ValueError('must be "0s" (off) or at least 100ms')
        return v

    @property
    def interval_seconds(self) -> float | None:
        seconds = self.interval.total_seconds()
        return seconds if seconds > 0 else None


class SmtpSecurity(StrEnum):
    STARTTLS = "starttls"
    TLS = "tls"
    NONE = "none"


class SmtpConfig(_Section):
    host: str = "localhost"
    port: Number = Field(default=587, ge=1, le=65535)
    security: SmtpSecurity = SmtpSecurity.STARTTLS
    username: str | None = None
    # Never written in the file: from GPUOPT_SMTP_PASSWORD or password_file only.
    password: SecretStr | None = None
    password_file: str | None = None


class ApiConfig(_Section):
    """The HTTP API and dashboard the daemon serves (orchestrator/api/)."""

    # HOST:PORT; "" turns the API off. Loopback by default: expose it with TLS below or
    # behind a reverse proxy (docs/team-server.md).
    address: str = "127.0.0.1:8470"
    tls_cert: str | None = None
    tls_key: str | None = None
    # The largest workdir archive a submit may upload (MiB), compressed and unpacked.
    max_upload_mib: Number = Field(default=100, ge=1, le=10_240)

    @field_validator("address")
    @classmethod
    def _host_port(cls, v: str) -> str:
        if v == "":
            return v
        host, sep, port = v.rpartition(":")  # port 0: any free port (tests)
        if not sep or not host or not port.isdigit() or not 0 <= int(port) < 65536:
            raise ValueError(f"{v!r} must be HOST:PORT, e.g. 127.0.0.1:8470, or \"\" (off)")
        return v

    @model_validator(mode="after")
    def _tls_pair(self) -> ApiConfig:
        if (self.tls_cert is None) != (self.tls_key is None):
            raise ValueError("tls_cert and tls_key go together: set both, or neither")
        return self


class PriceSource(StrEnum):
    SDK = "sdk"  # each cloud's own API, through its adapter (providers/<cloud>/)
    SKYPILOT_CATALOG = "skypilot-catalog"  # SkyPilot's catalog files (vms.csv per cloud)


class PricesConfig(_Section):
    # Where the daemon's polls read prices from. "skypilot-catalog" reads SkyPilot's
    # catalog files (catalog_dir, default: the directory the installed SkyPilot uses)
    # on the same schedule as the clouds' own APIs.
    sources: list[PriceSource] = Field(default_factory=lambda: [PriceSource.SDK], min_length=1)
    catalog_dir: str | None = None

    @field_validator("sources")
    @classmethod
    def _distinct(cls, v: list[PriceSource]) -> list[PriceSource]:
        if len(set(v)) != len(v):
            raise ValueError("a source is named twice")
        return v

    @property
    def from_catalog(self) -> bool:
        return PriceSource.SKYPILOT_CATALOG in self.sources

    @property
    def from_sdk(self) -> bool:
        return PriceSource.SDK in self.sources


class Settings(_Section):
    """The whole product's configuration (one TOML file + GPUOPT_* overrides)."""

    database: DatabaseConfig = Field(default_factory=DatabaseConfig)
    clouds: CloudsConfig = Field(default_factory=CloudsConfig)
    prices: PricesConfig = Field(default_factory=PricesConfig)
    executor: ExecutorConfig = Field(default_factory=ExecutorConfig)
    reserved: list[ReservedCapacity] = Field(default_factory=list)
    placement: PlacementConfig = Field(default_factory=PlacementConfig)
    spot: SpotConfig = Field(default_factory=SpotConfig)
    daemon: DaemonConfig = Field(default_factory=DaemonConfig)
    report: ReportConfig = Field(default_factory=ReportConfig)
    telemetry: TelemetryConfig = Field(default_factory=TelemetryConfig)
    smtp: SmtpConfig = Field(default_factory=SmtpConfig)
    api: ApiConfig = Field(default_factory=ApiConfig)
