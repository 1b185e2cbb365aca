// The console's copy buttons: a button with data-copy="<id>" copies that field's value.
// Without JavaScript (or clipboard access) the field is still there to select and copy by hand.
document.addEventListener("click", (event) => {
  const button = event.target.closest("button[data-copy]");
  if (!button) return;
  const field = document.getElementById(button.dataset.copy);
  const status = document.getElementById("copy-status");
  const say = (text) => { if (status) status.textContent = text; };
  field.select();
  if (navigator.clipboard && window.isSecureContext) {
    navigator.clipboard.writeText(field.value).then(() => say("Copied."), () => say("Selected: press Ctrl+C (⌘C) to copy."));
  } else {
    say(document.execCommand && document.execCommand("copy") ? "Copied." : "Selected: press Ctrl+C (⌘C) to copy.");
  }
});
