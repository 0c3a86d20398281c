

def test_success_comparisons_are_gated_by_the_learned_guard():
    """Below MIN_LEARNED_SUCCESS the comparisons are metrics, not checks, and the guard fails the run."""
    from icml2026.core import make_rng
    from icml2026.core.registry import get_experiment
    from icml2026.papers.specflow.experiments import MIN_LEARNED_SUCCESS

    exp = get_experiment("specflow.headline")
    out = exp(exp.config("smoke"), make_rng(0))
    names = [c.name for c in out.checks]
    assert names[0] == "guard_mvot_oracle_success"
    assert "specflow_minus_text_success" in out.metrics
    if out.metrics["mvot_oracle_success"] < MIN_LEARNED_SUCCESS:
        assert names == ["guard_mvot_oracle_success"] and not out.passed
    else:
        assert "specflow_minus_text_success" in names
