"""Tests of the course tool (tools/course_cli); see test_course_cli.py."""
