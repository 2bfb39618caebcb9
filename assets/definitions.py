"""The code location `dagster dev` loads (see `workspace.yaml`): assets, checks, the build job, a schedule
(off by default) and a sensor that notices a changed local source (off by default)."""

from dagster import (
    DefaultScheduleStatus,
    DefaultSensorStatus,
    Definitions,
    JobDefinition,
    MetadataValue,
    Nothing,
    OpExecutionContext,
    Out,
    Output,
    RunRequest,
    ScheduleDefinition,
    SensorEvaluationContext,
    SkipReason,
    define_asset_job,
    job,
    op,
    sensor,
)
from dagster_celery import celery_executor

from assets.build import build_index
from assets.ingestion import INGESTION_ASSETS, INGESTION_CHECKS, STRATEGY_PARTITIONS
from assets.resources import IngestionResource
from assets.storage import PickleFolderIOManager
from pipelines.ingestion.sources import source_fingerprint
from pipelines.settings import Settings

SETTINGS = Settings()

# By hand in the UI: materialise documents, backfill the `chunks` partitions, then the rest.
DOCUMENTS = ["source_documents", "clean_documents"]
REST = ["embeddings", "sentence_vectors", "reference_vectors", "shadow_collection", "active_index"]
documents_job = define_asset_job("documents", selection=DOCUMENTS)
chunks_job = define_asset_job("chunks_by_strategy", selection=["chunks"], partitions_def=STRATEGY_PARTITIONS)
rest_job = define_asset_job("embed_and_activate", selection=REST)

# The same three stages on the Celery executor: each step a task on whichever Celery worker takes it (RabbitMQ
# the broker), the values between steps in the shared I/O folder (`assets/build.py` `build_index_on_celery`).
celery_jobs = [
    define_asset_job("documents_on_celery", selection=DOCUMENTS, executor_def=celery_executor),
    define_asset_job(
        "chunks_on_celery", selection=["chunks"], partitions_def=STRATEGY_PARTITIONS, executor_def=celery_executor
    ),
    define_asset_job("embed_and_activate_on_celery", selection=REST, executor_def=celery_executor),
]


@op(required_resource_keys={"ragline"}, out=Out(Nothing))
def build_configured_index(context: OpExecutionContext) -> Output[None]:
    """The whole build, as `ragline index build` runs it: one run per stage, all recorded in this instance.

    A schedule or sensor cannot chain a partitioned run and the runs after it, so they launch this. Its
    output's metadata is the build's outcome (version, built, seconds, summary): the admin API reads it
    back from the run (server/builds.py)."""
    resource = context.resources.ragline
    env = resource.env
    outcome = build_index(env.settings, env.stores, env.request, force=resource.force)
    context.log.info(f"{'built' if outcome.built else 'unchanged'}: {outcome.version} in {outcome.seconds:.1f} s")
    return Output(
        None,
        metadata={
            "version": outcome.version,
            "built": outcome.built,
            "build_run_id": outcome.run_id or "",
            "seconds": round(outcome.seconds, 3),
            "summary": MetadataValue.json(outcome.summary),
        },
    )


@job(resource_defs={"ragline": IngestionResource()})
def index_build() -> None:
    build_configured_index()


index_build_job = index_build

index_build_schedule = ScheduleDefinition(
    name="index_build_schedule",
    job=index_build_job,
    cron_schedule=SETTINGS.build_schedule_cron,
    default_status=DefaultScheduleStatus.RUNNING if SETTINGS.build_schedule_enabled else DefaultScheduleStatus.STOPPED,
    description="Rebuild the index on RAGLINE_BUILD_SCHEDULE_CRON (RAGLINE_BUILD_SCHEDULE_ENABLED turns it on).",
)


def source_change_request(settings: Settings, context: SensorEvaluationContext) -> RunRequest | SkipReason:
    """A run request when the local source's files changed since the cursor (the first look counts as a change)."""
    fingerprint = source_fingerprint(settings)
    if fingerprint is None:
        return SkipReason("the source is not a local directory")
    if fingerprint == context.cursor:
        return SkipReason("the source has not changed")
    context.update_cursor(fingerprint)
    return RunRequest(run_key=fingerprint)


@sensor(
    job=index_build_job,
    minimum_interval_seconds=60,
    default_status=DefaultSensorStatus.RUNNING if SETTINGS.source_sensor_enabled else DefaultSensorStatus.STOPPED,
    description="Requests a build when the local source directory's files change (ids, sizes, mtimes).",
)
def source_changed_sensor(context: SensorEvaluationContext) -> RunRequest | SkipReason:
    return source_change_request(Settings(), context)  # read afresh: the source may be reconfigured


defs = Definitions(
    assets=INGESTION_ASSETS,
    asset_checks=INGESTION_CHECKS,
    jobs=[index_build_job, documents_job, chunks_job, rest_job, *celery_jobs],
    schedules=[index_build_schedule],
    sensors=[source_changed_sensor],
    resources={
        "ragline": IngestionResource(),
        "io_manager": PickleFolderIOManager(base_dir=str(SETTINGS.dagster_dir / "io" / "ui")),
    },
)


def documents_on_celery() -> JobDefinition:
    """The stages on Celery as module-level functions: what `reconstructable` needs to find them in a worker."""
    return defs.resolve_job_def("documents_on_celery")


def chunks_on_celery() -> JobDefinition:
    return defs.resolve_job_def("chunks_on_celery")


def embed_and_activate_on_celery() -> JobDefinition:
    return defs.resolve_job_def("embed_and_activate_on_celery")
