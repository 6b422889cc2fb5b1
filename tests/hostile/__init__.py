"""Tests that run the real assets on generated hostile inputs."""
