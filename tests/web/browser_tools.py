"""What the two browser tests of the wasm build share (browser_test.py, the companion page;
site_test.py, the companion site): their pass and fail lines, a loopback server of a folder, and
Debian's headless Chromium driven through chromedriver by python3-selenium (no browser download).
"""
import http.server
import threading

failures = []
passed = []


def check(condition, what):
    print(("ok    " if condition else "FAIL  ") + what, flush=True)
    (passed if condition else failures).append(what)


def serve(directory, requests=None):
    """Serves `directory` on 127.0.0.1 at a free port from a thread, appending the path of each
    request to `requests` when given. Returns the server and its base URL."""

    class Handler(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, directory=directory, **kwargs)

        def log_message(self, fmt, *args):
            if requests is not None:
                requests.append(self.path)

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, "http://127.0.0.1:%d/" % server.server_address[1]


def start_browser(window_size):
    """Debian's headless Chromium through chromedriver, quiet (no background requests), keeping
    every console message (driver.get_log("browser"))."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=" + window_size,
                "--disable-background-networking", "--disable-component-update",
                "--disable-default-apps", "--disable-sync", "--no-first-run",
                "--disable-features=Translate,OptimizationHints,MediaRouter"):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
    driver.set_script_timeout(300)
    return driver
