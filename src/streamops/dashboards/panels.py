"""Panel and variable builders shared by the streamops dashboards (grafana-foundation-sdk).

Every panel reads from the `${datasource}` variable, so a dashboard drops into any Grafana with
a Prometheus datasource. Refs are assigned A, B, C... in query order and panel ids in layout
order (`numbered`), so the generated JSON is the same on every build.
"""

from __future__ import annotations

from streamops.core.extras import require

require("dashboards", __name__)

from typing import Sequence, TypeVar

from grafana_foundation_sdk.builders import bargauge, common, prometheus, stat, table, timeseries
from grafana_foundation_sdk.builders.dashboard import (
    Dashboard,
    DashboardLink,
    DatasourceVariable,
    QueryVariable,
    ThresholdsConfig,
)
from grafana_foundation_sdk.models import dashboard as models
from grafana_foundation_sdk.models.common import (
    BigValueColorMode,
    BigValueGraphMode,
    BigValueTextMode,
    LegendDisplayMode,
    LegendPlacement,
    SortOrder,
    StackingMode,
    TooltipDisplayMode,
    VizOrientation,
)
from grafana_foundation_sdk.models.prometheus import PromQueryFormat

DATASOURCE_VARIABLE = "datasource"
DATASOURCE = models.DataSourceRef(type_val="prometheus", uid="${" + DATASOURCE_VARIABLE + "}")
FLEET_UID = "streamops-fleet"
STREAM_UID = "streamops-stream"
TAGS = ["streamops", "spark", "streaming"]

Query = prometheus.Dataquery
Step = tuple[float | None, str]
Panel = TypeVar("Panel", timeseries.Panel, stat.Panel, bargauge.Panel, table.Panel)


def query(expr: str, legend: str = "", instant: bool = False, as_table: bool = False) -> Query:
    target = prometheus.Dataquery().expr(expr)
    if legend:
        target = target.legend_format(legend)
    if as_table:
        target = target.format(PromQueryFormat.TABLE)
    return target.instant() if instant or as_table else target.range()


def _with_queries(panel, queries: Sequence[Query]):
    for index, target in enumerate(queries):
        panel = panel.with_target(target.ref_id(chr(ord("A") + index)))
    return panel


def _framed(panel: Panel, title: str, description: str, width: int, height: int) -> Panel:
    """What every streamops panel states: its title, what it shows, where its data comes from and
    its size on the 24-column grid."""
    return panel.title(title).description(description).datasource(DATASOURCE).span(width).height(height)


def _last_values(panel: Panel, expr: str, legend: str, steps: Sequence[Step]) -> Panel:
    """Numbers and bars show the latest value of each series of one instant query, coloured by
    `steps`, so they read the same as `streamops status` at that moment."""
    panel = panel.thresholds(thresholds(*steps)).reduce_options(
        common.ReduceDataOptions().calcs(["lastNotNull"]).values(False)
    )
    return _with_queries(panel, [query(expr, legend=legend, instant=True)])


def thresholds(*steps: Step) -> ThresholdsConfig:
    return (
        ThresholdsConfig()
        .mode(models.ThresholdsMode.ABSOLUTE)
        .steps([models.Threshold(value=value, color=color) for value, color in steps])
    )


def time_series(
    title: str,
    description: str,
    unit: str,
    queries: Sequence[Query],
    width: int = 12,
    stacked: bool = False,
    height: int = 8,
) -> timeseries.Panel:
    panel = (
        _framed(timeseries.Panel(), title, description, width, height)
        .unit(unit)
        .min(0)
        .fill_opacity(20 if stacked else 0)
        .legend(
            common.VizLegendOptions()
            .display_mode(LegendDisplayMode.TABLE)
            .placement(LegendPlacement.BOTTOM)
            .show_legend(True)
            .calcs(["lastNotNull", "max"])
        )
        .tooltip(common.VizTooltipOptions().mode(TooltipDisplayMode.MULTI).sort(SortOrder.DESCENDING))
    )
    if stacked:
        panel = panel.stacking(common.StackingConfig().mode(StackingMode.NORMAL))
    return _with_queries(panel, queries)


def series_panel(
    title: str,
    description: str,
    unit: str,
    expr: str,
    legend: str,
    width: int = 12,
    stacked: bool = False,
) -> timeseries.Panel:
    """A time series of one query: most panels draw one expression, one line per series."""
    return time_series(title, description, unit, [query(expr, legend)], width, stacked)


def unstacked(name: str) -> list[models.DynamicConfigValue]:
    """Override properties that draw series `name` as a line on top of a stack."""
    return [
        models.DynamicConfigValue(id_val="custom.stacking", value={"group": "A", "mode": "none"}),
        models.DynamicConfigValue(id_val="custom.fillOpacity", value=0),
        models.DynamicConfigValue(id_val="displayName", value=name),
    ]


def big_number(
    title: str,
    description: str,
    expr: str,
    steps: Sequence[Step],
    unit: str = "none",
    legend: str = "",
    width: int = 3,
    show_name: bool = False,
) -> stat.Panel:
    panel = (
        _framed(stat.Panel(), title, description, width, 4)
        .unit(unit)
        .color_mode(BigValueColorMode.BACKGROUND)
        .graph_mode(BigValueGraphMode.NONE)
        .text_mode(BigValueTextMode.NAME if show_name else BigValueTextMode.VALUE)
        .no_value("0")
    )
    return _last_values(panel, expr, legend, steps)


def ranking(
    title: str,
    description: str,
    unit: str,
    expr: str,
    steps: Sequence[Step],
    legend: str = "{{stream}}",
    width: int = 12,
    height: int = 8,
) -> bargauge.Panel:
    """Horizontal bars, one per series of an instant query (largest first when `expr` sorts)."""
    panel = (
        _framed(bargauge.Panel(), title, description, width, height)
        .unit(unit)
        .min(0)
        .orientation(VizOrientation.HORIZONTAL)
        .no_value("none")
    )
    return _last_values(panel, expr, legend, steps)


def table_of(
    title: str,
    description: str,
    queries: Sequence[Query],
    rename: dict[str, str],
    sort_by: str,
    hide: Sequence[str] = (),
    height: int = 10,
    width: int = 24,
) -> table.Panel:
    """One row per label set: instant table queries merged on their common labels, sorted by
    the (renamed) column `sort_by`, largest first."""
    panel = (
        _framed(table.Panel(), title, description, width, height)
        .show_header(True)
        .sort_by([common.TableSortByFieldState().display_name(sort_by).desc(True)])
        .with_transformation(models.DataTransformerConfig(id_val="merge", options={}))
        .with_transformation(
            models.DataTransformerConfig(
                id_val="organize",
                options={
                    "excludeByName": {"Time": True, **{name: True for name in hide}},
                    "renameByName": rename,
                },
            )
        )
    )
    return _with_queries(panel, queries)


def link_to_stream() -> list[models.DynamicConfigValue]:
    """Override properties that make a stream-name cell open that stream's detail dashboard."""
    url = f"/d/{STREAM_UID}?var-stream=${{__value.raw}}&${{__url_time_range}}"
    return [models.DynamicConfigValue(id_val="links", value=[{"title": "Stream detail", "url": url}])]


def datasource_variable() -> DatasourceVariable:
    return DatasourceVariable(DATASOURCE_VARIABLE).label("Prometheus").type("prometheus")


def label_variable(
    name: str, label: str, values_query: str, multi: bool = True, all_value: str | None = None
) -> QueryVariable:
    """A variable listing a label's values; `all_value` `.*` keeps series lacking the label."""
    variable = (
        QueryVariable(name)
        .label(label)
        .datasource(DATASOURCE)
        .query(values_query)
        .refresh(models.VariableRefresh.ON_TIME_RANGE_CHANGED)
        .sort(models.VariableSort.ALPHABETICAL_ASC)
        .multi(multi)
        .include_all(multi)
    )
    return variable.all_value(all_value) if all_value is not None else variable


def dashboard_link(title: str, uid: str) -> DashboardLink:
    return DashboardLink(title).type(models.DashboardLinkType.LINK).url(f"/d/{uid}").include_vars(False).keep_time(True)


def new_dashboard(title: str, uid: str, description: str) -> Dashboard:
    return (
        Dashboard(title)
        .uid(uid)
        .description(description)
        .tags(TAGS)
        .editable()
        .tooltip(models.DashboardCursorSync.CROSSHAIR)
        .time("now-1h", "now")
        .refresh("30s")
        .timezone("browser")
        .with_variable(datasource_variable())
    )


def numbered(built: models.Dashboard) -> models.Dashboard:
    """Give every panel (rows included) a stable id in layout order."""
    next_id = 1
    for panel in built.panels or []:
        panel.id_val = next_id
        next_id += 1
        for child in getattr(panel, "panels", None) or []:
            child.id_val = next_id
            next_id += 1
    return built
