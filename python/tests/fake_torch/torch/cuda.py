def is_available():
    return False


def device_count():
    return 0
