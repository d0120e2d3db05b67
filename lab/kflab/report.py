import json
def write_run(run_dir, result):
    (run_dir / "result.json").write_text(json.dumps(result, indent=1, default=str))
