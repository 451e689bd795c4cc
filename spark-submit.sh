#!/usr/bin/env bash
# Package replog and submit one of its commands to Spark:
#
#   ./spark-submit.sh demo
#   ./spark-submit.sh ingest --landing ./out/demo/steady-state --lake ./lake
#   MASTER=spark://host:7077 ./spark-submit.sh ingest --landing s3a://bucket/landing --config conf/cluster.example.yaml
#   DELTA_PACKAGES=io.delta:delta-spark_2.13:4.4.1 ./spark-submit.sh ...   # native delta-spark backend
#
# Environment: MASTER (default local[2]), SPARK_SUBMIT (default: the pyspark wheel's spark-submit),
# REPLOG_CONFIG (default conf/local.yaml), DELTA_PACKAGES (Maven coordinates; needs Maven access),
# SPARK_SUBMIT_OPTS_EXTRA (more spark-submit options, word-split).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
python=${PYTHON:-python3}
build="$here/build"
mkdir -p "$build"

# The job code travels to the executors as one zip (--py-files); caches are left out.
"$python" - "$here" "$build/replog.zip" <<'PY'
import sys, zipfile, pathlib
root, out = pathlib.Path(sys.argv[1]), sys.argv[2]
with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
    for pkg in ("replication_core", "schemas", "jobs"):
        for f in sorted((root / pkg).rglob("*")):
            if f.is_file() and "__pycache__" not in f.parts:
                z.write(f, f.relative_to(root).as_posix())
PY

submit=${SPARK_SUBMIT:-$("$python" -c 'import os, pyspark; print(os.path.join(os.path.dirname(pyspark.__file__), "bin", "spark-submit"))')}
master=${MASTER:-local[2]}
# The driver JVM starts before the job reads its config: JVM flags go here (see conf/local.yaml). In local
# mode that JVM runs the tasks too, and the parallel collector suits it (conf/local.yaml says why).
jvm_flags="-XX:-DontCompileHugeMethods"
case "$master" in local*) jvm_flags+=" -XX:+UseParallelGC" ;; esac
# Warnings and errors only (conf/log4j2.properties says why), unless SPARK_CONF_DIR configures logging.
if [ ! -f "${SPARK_CONF_DIR:-$here/no-spark-conf-dir}/log4j2.properties" ]; then
  jvm_flags+=" -Dlog4j2.configurationFile=file:$here/conf/log4j2.properties"
fi
args=(--master "$master" --py-files "$build/replog.zip" --conf spark.ui.showConsoleProgress=false
      --driver-java-options "$jvm_flags")
if [ -n "${DELTA_PACKAGES:-}" ]; then
  args+=(--packages "$DELTA_PACKAGES"
         --conf spark.sql.extensions=io.delta.sql.DeltaSparkSessionExtension
         --conf spark.sql.catalog.spark_catalog=org.apache.spark.sql.delta.catalog.DeltaCatalog)
fi
# shellcheck disable=SC2206
[ -n "${SPARK_SUBMIT_OPTS_EXTRA:-}" ] && args+=(${SPARK_SUBMIT_OPTS_EXTRA})

export REPLOG_SUBMITTED=1
export REPLOG_CONFIG=${REPLOG_CONFIG:-$here/conf/local.yaml}
export PYSPARK_PYTHON=${PYSPARK_PYTHON:-$(command -v "$python")}
exec "$submit" "${args[@]}" "$here/jobs/cli.py" "$@"
